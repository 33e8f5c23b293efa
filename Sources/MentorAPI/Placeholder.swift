// Placeholder; JSON-RPC types arrive with the daemon issue.
