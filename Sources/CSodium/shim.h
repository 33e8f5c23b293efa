#ifndef MENTORMATE_CSODIUM_SHIM_H
#define MENTORMATE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
