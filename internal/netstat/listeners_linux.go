package netstat

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

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
// the background by a shell that then ended) is not found; ListeningMarked
// finds it by its environment.
func Listening(roots []int) ([]Listener, error) { return ListeningMarked(roots, nil) }

// ListeningMarked is Listening that also finds the ports of the processes
// outside the trees that carry one of markers ("NAME=value") in their
// environment: those that left their tree but kept the environment it gave
// them. Such a Listener's Root is 0 and its Marker the entry it carries,
// the first of markers when it carries several. Only this user's processes
// are looked at, only while some listening port is not found in the trees,
// and the environment only of those outside the trees: a process that
// cleared its environment is not found.
func ListeningMarked(roots []int, markers []string) ([]Listener, error) {
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
	if len(markers) > 0 && len(found) < len(distinct(ports)) {
		escapees(markers, seen, ports, found)
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

// distinct are the ports of a socket table (inode → port), once each.
func distinct(ports map[string]int) map[int]bool {
	out := make(map[int]bool, len(ports))
	for _, port := range ports {
		out[port] = true
	}
	return out
}

// escapees adds to found the ports (of ports, inode → port) that this
// user's processes outside seen hold when they carry one of markers, in
// one pass over /proc. A port that several hold (a server's workers) goes
// to the lowest pid.
func escapees(markers []string, seen map[int]bool, ports map[string]int, found map[int]Listener) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	uid := uint32(os.Getuid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || seen[pid] {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) != nil || st.Uid != uid {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		marker, ok := firstMarker(env, markers)
		if !ok {
			continue
		}
		for _, port := range socketPorts(pid, ports) {
			if l, ok := found[port]; !ok || (l.Root == 0 && pid < l.Pid) {
				found[port] = Listener{Port: port, Pid: pid, Marker: marker}
			}
		}
	}
}

// firstMarker is the first of markers that the environment env (entries
// ended by NULs) holds.
func firstMarker(env []byte, markers []string) (string, bool) {
	best := len(markers)
	for len(env) > 0 && best > 0 {
		var entry []byte
		entry, env, _ = bytes.Cut(env, []byte{0})
		for i, m := range markers[:best] {
			if string(entry) == m {
				best = i
				break
			}
		}
	}
	if best == len(markers) {
		return "", false
	}
	return markers[best], true
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
