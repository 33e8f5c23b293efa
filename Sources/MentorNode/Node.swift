// The node service arrives here (issue 3).
