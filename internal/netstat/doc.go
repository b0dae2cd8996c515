// Package netstat reads the system's TCP sockets: on Linux from
// /proc/net/tcp and tcp6, who listens on a port, who owns the other end of
// a connection, and which ports the process trees rooted at some pids
// listen on (Listening). Listening is Linux-only; elsewhere it answers
// ErrNotSupported.
package netstat
