#ifndef MENTORMATE_CDNSSD_SHIM_H
#define MENTORMATE_CDNSSD_SHIM_H
#include <dns_sd.h>
#endif
