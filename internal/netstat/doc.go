// Package netstat reads the system's TCP sockets from /proc/net/tcp and
// tcp6 (Linux only): who listens on a port, who owns the other end of a
// connection.
package netstat
