package opencode

import (
	"fmt"
	"os"
	"strings"

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
// 127.0.0.1:port, from /proc/net/tcp.
func loopbackListeners(port int) (map[string]bool, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == want && f[3] == "0A" {
			inodes[f[9]] = true
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
