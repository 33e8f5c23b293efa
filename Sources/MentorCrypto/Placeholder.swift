// Placeholder; filled by the crypto work.
