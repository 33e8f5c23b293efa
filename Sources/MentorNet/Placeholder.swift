// Sockets and the API server (issue 3).
