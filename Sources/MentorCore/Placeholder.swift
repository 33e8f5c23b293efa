// Placeholder; filled by the core work.
