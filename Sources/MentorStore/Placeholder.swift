// Placeholder; filled by the store work.
