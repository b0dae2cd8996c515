package netstat

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServer starts `sh -c 'python3 -m http.server … & wait'`, so that the
// server is a grandchild of the returned shell, and returns the shell and
// the server's port.
func startServer(t *testing.T) (sh *exec.Cmd, port int) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command("sh", "-c", "python3 -u -m http.server --bind 127.0.0.1 0 & wait")
	cmd.Dir = t.TempDir()
	// A group of its own, so that the cleanup ends the server too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	re := regexp.MustCompile(`port (\d+)`)
	select {
	case line := <-lines:
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("the server said %q, not its port", line)
		}
		port, _ = strconv.Atoi(m[1])
		go func() {
			for range lines {
			}
		}()
		return cmd, port
	case <-time.After(10 * time.Second):
		t.Fatal("the server named no port in 10 s")
	}
	return nil, 0
}

// TestListeningFindsAServerInAProcessTree: a server started by a child
// shell is found under the shell, with its own pid and command line, and
// under no other tree.
func TestListeningFindsAServerInAProcessTree(t *testing.T) {
	sh, port := startServer(t)
	ls, err := Listening([]int{sh.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ls, func(l Listener) bool { return l.Port == port })
	if i < 0 {
		t.Fatalf("port %d not among %+v", port, ls)
	}
	l := ls[i]
	if l.Pid == sh.Process.Pid || l.Root != sh.Process.Pid || !strings.Contains(l.Command, "http.server") {
		t.Fatalf("listener %+v: want the python server (not the shell %d) under root %d", l, sh.Process.Pid, sh.Process.Pid)
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
	if got := Ports([]int{other.Process.Pid, sh.Process.Pid}); !slices.Equal(got, []int{port}) {
		t.Fatalf("Ports = %v, want [%d]", got, port)
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
	sh, _ := startServer(t)
	kids, ok := children(sh.Process.Pid)
	if !ok {
		t.Skip("this kernel has no /proc/<pid>/task/*/children")
	}
	if scanned := childrenByParent()[sh.Process.Pid]; !slices.Equal(kids, scanned) || len(kids) != 1 {
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
