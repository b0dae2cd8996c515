package opencode

import (
	"fmt"
	"net"
	"os"
	"strings"

	"codehydra/internal/netstat"
	"codehydra/internal/reap"
)

// listensOn reports whether one of the processes of group pgid that carry
// marker holds a listening socket on 127.0.0.1:port: the port an agent's
// output named is then its own, not another program's that would be sent
// the agent's password. known is false where that cannot be read.
func listensOn(pgid int, marker string, port int) (owned, known bool) {
	inodes, err := loopbackListeners(port)
	if err != nil {
		return false, false
	}
	if len(inodes) == 0 {
		return false, true
	}
	for _, p := range reap.MarkedMembers(pgid, marker) {
		owned = owned || holdsSocket(p.Pid, inodes)
		p.Release()
	}
	return owned, true
}

// loopbackListeners returns the inodes of the sockets listening on
// 127.0.0.1:port.
func loopbackListeners(port int) (map[string]bool, error) {
	socks, err := netstat.Sockets("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	want := netstat.Addrs(net.IPv4(127, 0, 0, 1), port)[0]
	inodes := map[string]bool{}
	for _, s := range socks {
		if s.Local == want && s.State == "0A" {
			inodes[s.Inode] = true
		}
	}
	return inodes, nil
}

// holdsSocket reports whether pid has a file descriptor on one of the
// socket inodes.
func holdsSocket(pid int, inodes map[string]bool) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}
