package netstat

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"codehydra/internal/reap"
)

// Listening returns the TCP ports that the processes of the trees rooted at
// roots listen on and that are reachable at 127.0.0.1 (bound to a loopback
// address or to every address), one Listener per port, sorted by port. A
// port held by several processes (a server's workers share its socket)
// goes to the one nearest its root.
//
// It reads the listening sockets from /proc/net/tcp and tcp6, each tree
// from /proc/<pid>/task/*/children (a scan of every process's parent where
// the kernel has no such file), and the sockets each process holds from
// /proc/<pid>/fd. Only the network namespace of this process is read: a
// port opened in another is not reachable at this 127.0.0.1 anyway. A
// process that left its tree (a daemon that forked twice, a server put in
// the background by a shell that then ended) is not found.
func Listening(roots []int) ([]Listener, error) {
	socks, err := Sockets("/proc/net/tcp", "/proc/net/tcp6")
	if err != nil {
		return nil, fmt.Errorf("read the TCP sockets: %w", err)
	}
	ports := map[string]int{} // listening socket inode → port
	for _, s := range socks {
		if s.State != "0A" {
			continue
		}
		if port, ok := loopbackPort(s.Local); ok {
			ports[s.Inode] = port
		}
	}
	if len(ports) == 0 {
		return nil, nil
	}
	found := map[int]Listener{}
	seen := map[int]bool{}
	var parents map[int][]int // filled by the scan, when children files are missing
	for _, root := range roots {
		queue := []int{root}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if pid <= 1 || seen[pid] {
				continue
			}
			seen[pid] = true
			for _, port := range socketPorts(pid, ports) {
				if _, ok := found[port]; !ok {
					found[port] = Listener{Port: port, Pid: pid, Root: root}
				}
			}
			kids, ok := children(pid)
			if !ok {
				if parents == nil {
					parents = childrenByParent()
				}
				kids = parents[pid]
			}
			queue = append(queue, kids...)
		}
	}
	out := make([]Listener, 0, len(found))
	for _, l := range found {
		l.Command, _ = reap.CommandLine(l.Pid)
		if len(l.Command) > maxCommand {
			l.Command = l.Command[:maxCommand] + "…"
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Listener) int { return cmp.Compare(a.Port, b.Port) })
	return out, nil
}

// loopbackPort is the port of a table's local address ("ADDR:PORT" in hex)
// when a client on 127.0.0.1 reaches it: bound to 0.0.0.0, ::, 127.x.x.x,
// ::1, or 127.x.x.x mapped into IPv6.
func loopbackPort(local string) (int, bool) {
	addr, hexPort, ok := strings.Cut(local, ":")
	if !ok {
		return 0, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return 0, false
	}
	switch addr {
	case words(make([]byte, 4)), words(make([]byte, 16)), words(ipv6Loopback):
		return int(port), true
	}
	var v4 string // the IPv4 address's word, alone or mapped
	switch len(addr) {
	case 8:
		v4 = addr
	case 32:
		if addr[:24] != words(ipv4Mapped)[:24] {
			return 0, false
		}
		v4 = addr[24:]
	default:
		return 0, false
	}
	// The first byte of the address is 127: the word's low byte on a
	// little-endian machine, its high byte on a big-endian one.
	first := v4[:2]
	if littleEndian {
		first = v4[6:]
	}
	return int(port), first == "7F"
}

var (
	ipv6Loopback = append(make([]byte, 15), 1)
	ipv4Mapped   = append(append(make([]byte, 10), 0xff, 0xff), 0, 0, 0, 0)
)

// socketPorts are the ports of the listening sockets (inode → port) that
// pid holds.
func socketPorts(pid int, ports map[string]int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, fd := range fds {
		target, err := os.Readlink(dir + fd.Name())
		if err != nil {
			continue
		}
		inode, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if port, ok := ports[strings.TrimSuffix(inode, "]")]; ok {
			out = append(out, port)
		}
	}
	return out
}

// children are the pids of pid's children, from each of its threads'
// children file; ok is false when the kernel has none (built without
// CONFIG_PROC_CHILDREN). A process that is gone has no children.
func children(pid int) (kids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if os.IsNotExist(err) {
			if _, serr := os.Stat(dir + t.Name()); serr == nil {
				return nil, false
			}
		}
		for f := range strings.FieldsSeq(string(b)) {
			if kid, err := strconv.Atoi(f); err == nil {
				kids = append(kids, kid)
			}
		}
	}
	return kids, true
}

// childrenByParent maps each process's parent to it, from every
// /proc/<pid>/stat.
func childrenByParent() map[int][]int {
	out := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[ppid] = append(out[ppid], pid)
		}
	}
	return out
}
