package gateway

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"codehydra/internal/netstat"
)

// peerOwnerKnown says that peerOwner can tell who runs the other end of
// a loopback connection here.
const peerOwnerKnown = true

// peerOwner is the uid of the socket at the other end of the TCP
// connection c: the socket whose local address is c's remote one and
// whose remote address is c's local one is the server's end of this very
// connection, and its owner the server's user. Only an established (or
// SYN_RECV) one counts: a TIME_WAIT left by an earlier connection of the
// same ports is owned by no one (uid 0).
func peerOwner(c net.Conn) (int, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, errors.New("not a TCP connection")
	}
	socks, err := netstat.Sockets("/proc/net/tcp", "/proc/net/tcp6")
	if err != nil {
		return 0, err
	}
	locals, remotes := netstat.Addrs(remote.IP, remote.Port), netstat.Addrs(local.IP, local.Port)
	in := func(list []string, s string) bool {
		return slices.ContainsFunc(list, func(e string) bool { return strings.EqualFold(e, s) })
	}
	for _, s := range socks {
		if in(locals, s.Local) && in(remotes, s.Remote) && (s.State == "01" || s.State == "03") {
			if uid, err := strconv.Atoi(s.UID); err == nil {
				return uid, nil
			}
		}
	}
	return 0, fmt.Errorf("no socket for %s in /proc/net/tcp", remote)
}
