package netstat

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// TestListeningFindsAServerInAProcessTree: the ports of a process and of
// its child are found under the process, each with its own pid and command
// line, and under no other tree.
func TestListeningFindsAServerInAProcessTree(t *testing.T) {
	tree := testenv.StartServerTree(t, t.TempDir())
	ls, err := Listening([]int{tree.Pid})
	if err != nil {
		t.Fatal(err)
	}
	byPort := map[int]Listener{}
	for _, l := range ls {
		byPort[l.Port] = l
	}
	own, child := byPort[tree.OwnPort], byPort[tree.ChildPort]
	if own.Pid != tree.Pid || own.Root != tree.Pid {
		t.Errorf("the root's port %d: %+v, want pid and root %d", tree.OwnPort, own, tree.Pid)
	}
	if child.Pid == 0 || child.Pid == tree.Pid || child.Root != tree.Pid || !strings.Contains(child.Command, "http.server") {
		t.Errorf("the child's port %d: %+v, want the http.server under root %d", tree.ChildPort, child, tree.Pid)
	}

	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	ls, err = Listening([]int{other.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 0 {
		t.Fatalf("a tree that listens on nothing: %+v", ls)
	}
	want := []int{tree.OwnPort, tree.ChildPort}
	slices.Sort(want)
	if got := Ports([]int{other.Process.Pid, tree.Pid}); !slices.Equal(got, want) {
		t.Fatalf("Ports = %v, want %v", got, want)
	}
}

// TestListeningMarkedFindsAServerThatLeftItsTree: a server that a shell of
// the tree put in the background before it ended is not in the tree; it
// is found by its marker, with root 0, the marker, its pid and command,
// and not by another marker.
func TestListeningMarkedFindsAServerThatLeftItsTree(t *testing.T) {
	tree := testenv.StartServerTreeWith(t, t.TempDir(), testenv.TreeOptions{Escape: true})
	escaped := func(ls []Listener) (Listener, bool) {
		i := slices.IndexFunc(ls, func(l Listener) bool { return l.Port == tree.EscapedPort })
		if i < 0 {
			return Listener{}, false
		}
		return ls[i], true
	}
	ls, err := Listening([]int{tree.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := escaped(ls); ok {
		t.Fatalf("the escaped server is in its tree: %+v", l)
	}

	ls, err = ListeningMarked([]int{tree.Pid}, []string{"CODEHYDRA_AGENT_ID=another", tree.Marker})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := escaped(ls)
	if !ok || l.Pid != tree.EscapedPid || l.Root != 0 || l.Marker != tree.Marker || !strings.Contains(l.Command, "http.server") {
		t.Errorf("the escaped server on %d: %+v, %v; want pid %d, root 0, marker %q, its command", tree.EscapedPort, l, ok, tree.EscapedPid, tree.Marker)
	}
	if !slices.ContainsFunc(ls, func(l Listener) bool { return l.Port == tree.ChildPort && l.Root == tree.Pid }) {
		t.Errorf("the child's port %d is not found under its root: %+v", tree.ChildPort, ls)
	}

	ls, err = ListeningMarked([]int{tree.Pid}, []string{"CODEHYDRA_AGENT_ID=another"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := escaped(ls); ok {
		t.Fatalf("found by another marker: %+v", l)
	}
}

// TestListeningSeesOnlyLoopbackReachablePorts: this process's listeners
// on 127.0.0.1 and ::1 are found with it as the root; a closed one is not.
func TestListeningSeesOnlyLoopbackReachablePorts(t *testing.T) {
	var want []int
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err)
			continue
		}
		defer ln.Close()
		want = append(want, ln.Addr().(*net.TCPAddr).Port)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	ls, err := Listening([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range want {
		if !slices.ContainsFunc(ls, func(l Listener) bool { return l.Port == port && l.Pid == os.Getpid() }) {
			t.Errorf("port %d not found among %+v", port, ls)
		}
	}
	if slices.ContainsFunc(ls, func(l Listener) bool { return l.Port == gone }) {
		t.Errorf("closed port %d found", gone)
	}
}

func TestLoopbackPortTellsReachableAddresses(t *testing.T) {
	if !littleEndian {
		t.Skip("the cases are spelled for a little-endian machine")
	}
	for _, c := range []struct {
		local string
		port  int
		ok    bool
	}{
		{"0100007F:1F90", 8080, true},                         // 127.0.0.1
		{"0200007F:0050", 80, true},                           // 127.0.0.2
		{"00000000:0016", 22, true},                           // 0.0.0.0
		{"0101A8C0:0016", 0, false},                           // 192.168.1.1
		{"00000000000000000000000000000000:1F90", 8080, true}, // ::
		{"00000000000000000000000001000000:1F90", 8080, true}, // ::1
		{"0000000000000000FFFF00000100007F:1F90", 8080, true}, // ::ffff:127.0.0.1
		{"0000000000000000FFFF00000101A8C0:1F90", 0, false},   // ::ffff:192.168.1.1
		{"B80D0120000000000000000001000000:1F90", 0, false},   // 2001:db8::1
		{"nonsense", 0, false},
	} {
		port, ok := loopbackPort(c.local)
		if ok != c.ok || ok && port != c.port {
			t.Errorf("loopbackPort(%s) = %d, %v; want %d, %v", c.local, port, ok, c.port, c.ok)
		}
	}
}

// TestChildrenAgreeWithTheParentScan: where the kernel has children files,
// they list what the scan of every parent finds.
func TestChildrenAgreeWithTheParentScan(t *testing.T) {
	tree := testenv.StartServerTree(t, t.TempDir())
	kids, ok := children(tree.Pid)
	if !ok {
		t.Skip("this kernel has no /proc/<pid>/task/*/children")
	}
	if scanned := childrenByParent()[tree.Pid]; !slices.Equal(kids, scanned) || len(kids) != 1 {
		t.Fatalf("children %v, the scan %v: want the one server", kids, scanned)
	}
}

// BenchmarkListening is what the tray's poll costs per workspace: this
// process's tree (the test binary and a server's shell) on this machine.
func BenchmarkListening(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	for b.Loop() {
		if _, err := Listening([]int{os.Getpid()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListeningMarked is the same poll when a marker is looked for
// and a port is left after the trees, so that every process of this user
// outside them is looked at: the most the previews' one look costs.
func BenchmarkListeningMarked(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	for b.Loop() {
		if _, err := ListeningMarked([]int{other.Process.Pid}, []string{"CODEHYDRA_AGENT_ID=nobody"}); err != nil {
			b.Fatal(err)
		}
	}
}
