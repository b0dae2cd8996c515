package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	RunHelperIfAsked()
	if what, ok := os.LookupEnv(socketProbeEnv); ok {
		socketProbe(what)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// socketProbeEnv has this test binary, started inside a sandbox, try a
// socket and print what came of it (see socketProbe).
const socketProbeEnv = "SANDBOX_TEST_SOCKET_PROBE"

// socketProbe tries what says: "dial:<address>" connects to a unix
// socket (an address that starts with @ is abstract) and prints
// CONNECTED or REFUSED with the error; "pair" makes a socket pair and
// passes a line through it, then an inet socket, and calls io_uring_setup.
func socketProbe(what string) {
	if addr, ok := strings.CutPrefix(what, "dial:"); ok {
		c, err := net.Dial("unix", addr)
		if err != nil {
			fmt.Printf("REFUSED %s: %v\n", addr, err)
			return
		}
		c.Close()
		fmt.Println("CONNECTED " + addr)
		return
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Printf("PAIR-FAILED %v\n", err)
	} else {
		_, werr := unix.Write(fds[0], []byte("through"))
		buf := make([]byte, 16)
		n, rerr := unix.Read(fds[1], buf)
		fmt.Printf("PAIR %s %v %v\n", buf[:n], werr, rerr)
	}
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
		fmt.Printf("INET-FAILED %v\n", err)
	} else {
		unix.Close(fd)
		fmt.Println("INET-OK")
	}
	params := make([]byte, 120) // struct io_uring_params
	_, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	fmt.Printf("IO_URING %d\n", errno)
}

// confined runs script with sh under p through the helper (this test
// binary) and returns its combined output, the status the helper
// reported and the exit error.
func confined(t *testing.T, p Policy, env []string, script string) (string, Status, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	args, penv, err := HelperArgs(sh, []string{"sh", "-c", script}, p)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), penv), env...) // env may override the policy
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, serr := ReadOutcome(r)
	err = cmd.Wait()
	if serr != nil {
		return out.String(), st, serr
	}
	return out.String(), st, err
}

func requireLandlock(t *testing.T) Status {
	t.Helper()
	st := Probe()
	if !st.Enforced {
		// testenv.RequireSandbox's rule; testenv imports this package.
		if os.Getenv("CODEHYDRA_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("no Landlock here: %s (and CODEHYDRA_REQUIRE_SANDBOX=1 forbids skipping)", st.Reason)
		}
		t.Skipf("no Landlock here: %s", st.Reason)
	}
	return st
}

// TestAConfinedShellReachesItsGrantsAndNothingElse runs a shell under a
// policy shaped like an agent's and tries, from inside, what a prompt-
// injected agent would: read and write outside its grants, list a
// folder with a hole, signal and read the environment of a process
// outside its domain (an unconfined one, and one confined in a sibling
// domain).
func TestAConfinedShellReachesItsGrantsAndNothingElse(t *testing.T) {
	want := requireLandlock(t)
	root := tree(t, "home/secret", "home/ok", "ws/a/", "ws/b/secret", "private/token")
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws/a")
	p := Policy{
		Grants: []Grant{{Path: "/", Access: Read}, {Path: ws, Access: Write}, {Path: "/dev/null", Access: Device}},
		Deny:   []string{filepath.Join(root, "private"), filepath.Join(root, "ws/b"), filepath.Join(home, "secret")},
	}
	outside := exec.Command("sleep", "60")
	outside.Env = append(os.Environ(), "OUTSIDE_SECRET=xyzzy")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outside.Process.Kill(); _ = outside.Wait() })
	// A sibling confined in a domain of its own.
	self, _ := os.Executable()
	sleep, _ := exec.LookPath("sleep")
	sargs, senv, _ := HelperArgs(sleep, []string{"sleep", "60"}, p)
	sibling := exec.Command(self, sargs...)
	sibling.Env = append(os.Environ(), senv, "SIBLING_SECRET=plugh")
	if err := sibling.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sibling.Process.Kill(); _ = sibling.Wait() })

	script := fmt.Sprintf(`
echo inside > %[1]s/new && cat %[1]s/new
cat %[2]s/ok
cat %[2]s/secret || echo DENIED-home-secret
cat %[3]s/private/token || echo DENIED-token
cat %[3]s/ws/b/secret || echo DENIED-other-workspace
echo x > %[3]s/ws/b/planted || echo DENIED-write-other
echo x > %[2]s/planted || echo DENIED-write-home
ls %[3]s >/dev/null || echo DENIED-list-hole-parent
kill -0 %[4]d || echo DENIED-signal
tr '\0' '\n' < /proc/%[4]d/environ | grep OUTSIDE_SECRET || echo DENIED-environ-outside
sleep 0.5; tr '\0' '\n' < /proc/%[5]d/environ | grep SIBLING_SECRET || echo DENIED-environ-sibling
`, ws, home, root, outside.Process.Pid, sibling.Process.Pid)
	out, st, err := confined(t, p, nil, script)
	if err != nil {
		t.Fatalf("confined shell: %v\n%s", err, out)
	}
	if st != want {
		t.Errorf("status = %+v, want %+v", st, want)
	}
	for _, line := range []string{"inside", "home/ok", "DENIED-home-secret", "DENIED-token", "DENIED-other-workspace",
		"DENIED-write-other", "DENIED-write-home", "DENIED-list-hole-parent", "DENIED-signal", "DENIED-environ-outside",
		"DENIED-environ-sibling"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	for _, leak := range []string{"xyzzy", "plugh", "private/token", "ws/b/secret"} {
		if strings.Contains(out, leak) && !strings.Contains(out, "cat: "+filepath.Join(root, leak)) {
			t.Errorf("output shows %q:\n%s", leak, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "ws/b/planted")); err == nil {
		t.Error("the confined shell wrote into the other workspace")
	}
}

func TestAHelperThatCannotEnforceReportsWhyAndRunsNothing(t *testing.T) {
	requireLandlock(t)
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}}}
	out, _, err := confined(t, p, []string{PolicyEnv + `={"grants":[{"path":"relative","access":1}]}`}, "echo RAN")
	if err == nil || strings.Contains(out, "RAN") {
		t.Fatalf("err = %v, output %q; want an error and nothing run", err, out)
	}
}

// TestAConfinedProcessMakesNoLinkInTheGitFolders: CodeHydra's own git
// appends to reflogs in the repository's logs/ outside any sandbox; a
// link an agent made there would have it append where the link leads.
func TestAConfinedProcessMakesNoLinkInTheGitFolders(t *testing.T) {
	requireLandlock(t)
	root := tree(t, "repo/.git/logs/refs/heads/main", "repo/.git/refs/heads/main", "home/.bashrc", "ws/")
	logs := filepath.Join(root, "repo/.git/logs")
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: logs, Access: GitWrite},
		{Path: filepath.Join(root, "repo/.git/refs"), Access: GitWrite}, {Path: filepath.Join(root, "ws"), Access: Write},
		{Path: "/dev/null", Access: Device}}}
	out, _, err := confined(t, p, nil, fmt.Sprintf(`
echo entry >> %[1]s/refs/heads/main && echo APPENDED
echo new > %[1]s/refs/heads/other && echo MADE
ln -s %[2]s/home/.bashrc %[1]s/refs/heads/evil || echo REFUSED-link
ln -s %[2]s/home/.bashrc %[2]s/ws/link && mv %[2]s/ws/link %[1]s/refs/heads/moved || echo REFUSED-move
mkdir %[2]s/ws/d && ln -s %[2]s/home/.bashrc %[2]s/ws/d/evil && mv %[2]s/ws/d %[1]s/refs/heads/d || echo REFUSED-folder
mkfifo %[1]s/fifo || echo REFUSED-fifo
echo obj > %[1]s/tmp_obj && mv %[1]s/tmp_obj %[1]s/final_obj && echo RENAMED-IN-PLACE
`, logs, root))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"APPENDED", "MADE", "REFUSED-link", "REFUSED-move", "REFUSED-folder", "REFUSED-fifo", "RENAMED-IN-PLACE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if fi, err := os.Lstat(filepath.Join(logs, "refs/heads/moved")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Error("a link was moved into logs/")
	}
	if _, err := os.Lstat(filepath.Join(logs, "refs/heads/d/evil")); err == nil {
		t.Error("a folder holding a link was moved into logs/")
	}
}

// TestTheHelperGrantsNoPathThatNowLeadsThroughALink: a path in a policy
// was resolved when the policy was made; a link put in it since (by a
// process of an earlier sandbox, or another user in /tmp) must not take
// the grant to where it leads.
func TestTheHelperGrantsNoPathThatNowLeadsThroughALink(t *testing.T) {
	requireLandlock(t)
	root := tree(t, "target/secret", "ws/")
	swapped := filepath.Join(root, "swapped")
	if err := os.Symlink(filepath.Join(root, "target"), swapped); err != nil {
		t.Fatal(err)
	}
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: filepath.Join(swapped), Access: Write}, {Path: "/dev/null", Access: Device}},
		Deny: []string{filepath.Join(root, "target")}}
	out, _, err := confined(t, p, nil, fmt.Sprintf(`echo x > %[1]s/target/planted || echo REFUSED; cat %[1]s/target/secret || echo REFUSED-read`, root))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "REFUSED") || !strings.Contains(out, "REFUSED-read") {
		t.Errorf("the grant followed the link:\n%s", out)
	}
}

// listenOutside listens on a unix socket at addr (a path, or @name for an
// abstract one) from this test, outside any sandbox, and checks that an
// unconfined dial connects, so that a refusal inside says something.
// accepted reports whether a connection is waiting since.
func listenOutside(t *testing.T, addr string) (accepted func() bool) {
	t.Helper()
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ul := l.(*net.UnixListener)
	accepted = func() bool {
		// A dial that got through is in the backlog before the process
		// that made it ended.
		_ = ul.SetDeadline(time.Now().Add(200 * time.Millisecond))
		c, err := ul.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatalf("an unconfined dial to %s: %v", addr, err)
	}
	c.Close()
	if !accepted() {
		t.Fatalf("the listener on %s saw no unconfined dial", addr)
	}
	return accepted
}

// socketDir is a folder for sockets with a short path (a socket's path
// has at most 107 bytes; t.TempDir's are long).
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "uds")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// probeScript is a shell line that runs this test binary's socket probe
// inside the sandbox.
func probeScript(t *testing.T, what string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s=%q %q", socketProbeEnv, what, self)
}

// TestAConfinedProcessCannotConnectToAUnixSocketOutsideItsSandbox: the
// session D-Bus, an ssh-agent and X11 listen on unix sockets in folders
// a confined process may read; before Landlock ABI 9 the seccomp filter
// keeps it from them, from ABI 9 on Landlock's rules do. Settings
// sandbox.unixSockets lets it through.
func TestAConfinedProcessCannotConnectToAUnixSocketOutsideItsSandbox(t *testing.T) {
	want := requireLandlock(t)
	bus := filepath.Join(socketDir(t), "bus")
	accepted := listenOutside(t, bus)
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: "/dev/null", Access: Device}}}

	out, st, err := confined(t, p, nil, probeScript(t, "dial:"+bus))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "REFUSED "+bus) || !strings.Contains(out, "permission denied") {
		t.Errorf("a confined dial to %s: %s; want permission denied (EACCES)", bus, out)
	}
	if accepted() {
		t.Error("the listener outside got a connection from inside the sandbox")
	}
	if st != want || strings.Contains(st.Gaps, "unix sockets by path") {
		t.Errorf("status = %+v, want %+v, naming no gap for unix sockets", st, want)
	}
	if want.ABI < 9 && !st.UnixSocketFilter {
		t.Errorf("status = %+v: Landlock ABI %d, and no unix socket filter said", st, want.ABI)
	}

	p.UnixSockets = true
	out, st, err = confined(t, p, nil, probeScript(t, "dial:"+bus))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "CONNECTED "+bus) || !accepted() {
		t.Errorf("with unix sockets allowed, a confined dial to %s: %s; want connected", bus, out)
	}
	if st.UnixSocketFilter || !strings.Contains(st.Gaps, "sandbox.unixSockets") {
		t.Errorf("with unix sockets allowed, status = %+v; want no filter, and the gap said", st)
	}
}

// TestAConfinedProcessCannotConnectToAnAbstractSocketOutsideEvenWhenAllowed:
// an abstract socket has no path for a rule or a setting to grant; from
// Landlock ABI 6 on, its scope keeps it inside the domain whatever the
// settings say.
func TestAConfinedProcessCannotConnectToAnAbstractSocketOutsideEvenWhenAllowed(t *testing.T) {
	want := requireLandlock(t)
	if want.ABI < 6 {
		t.Skipf("Landlock ABI %d has no scope for abstract unix sockets (ABI 6)", want.ABI)
	}
	addr := fmt.Sprintf("@codehydra-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	accepted := listenOutside(t, addr)
	for _, allowed := range []bool{false, true} {
		p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: "/dev/null", Access: Device}}, UnixSockets: allowed}
		out, _, err := confined(t, p, nil, probeScript(t, "dial:"+addr))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "REFUSED "+addr) || accepted() {
			t.Errorf("unix sockets allowed %v: a confined dial to %s: %s; want refused, and nothing accepted", allowed, addr, out)
		}
		if allowed && !strings.Contains(out, "operation not permitted") {
			t.Errorf("unix sockets allowed: %s; want Landlock's scope to refuse it (EPERM)", out)
		}
	}
}

// TestSocketPairsPipesAndChildrenStillWorkUnderTheFilter: node, bun and
// libuv give their children stdio through socket pairs, and shells
// through pipes; the filter refuses only making unix sockets (and
// io_uring, which could make them unseen).
func TestSocketPairsPipesAndChildrenStillWorkUnderTheFilter(t *testing.T) {
	want := requireLandlock(t)
	ws := t.TempDir()
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: ws, Access: Write}, {Path: "/dev/null", Access: Device}}}
	out, _, err := confined(t, p, nil, probeScript(t, "pair")+fmt.Sprintf(`
echo piped | tr a-z A-Z | cat
( echo sub; sh -c 'echo grandchild' ) > %[1]s/out && cat %[1]s/out
echo "$(echo substituted)"
`, ws))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range []string{"PAIR through <nil> <nil>", "INET-OK", "PIPED", "sub\ngrandchild", "substituted"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	if want.UnixSocketFilter && !strings.Contains(out, fmt.Sprintf("IO_URING %d", unix.ENOSYS)) {
		t.Errorf("io_uring under the filter: %s; want ENOSYS (%d)", out, unix.ENOSYS)
	}
}
