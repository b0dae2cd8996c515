package testenv

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ServerTree is a process tree that listens: a root process listening on
// OwnPort (as an agent's own server does) whose child, python3's
// http.server, listens on ChildPort, both on 127.0.0.1.
type ServerTree struct {
	Pid                int
	OwnPort, ChildPort int
	// Marker is the entry in the environment of every process of the
	// tree, as an agent's: CODEHYDRA_AGENT_ID=<random>.
	Marker string
	// EscapedPid and EscapedPort are, with TreeOptions.Escape, the
	// http.server that a shell of the tree put in the background before
	// it ended: out of the tree, its parent now 1 or a subreaper.
	EscapedPid, EscapedPort int
	// Stop kills the tree and waits for its root; the end of the test
	// does it too.
	Stop func()
}

// serverTreeScript is the root: it listens, says on which port, with an
// argument has a shell put an http.server in the background (its output in
// escaped.log) and end, and runs the http.server until it is killed.
const serverTreeScript = `
import socket, subprocess, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print("own", s.getsockname()[1], flush=True)
if len(sys.argv) > 1:
    subprocess.run(["sh", "-c", sys.executable + " -u -m http.server --bind 127.0.0.1 0 >escaped.log 2>&1 & echo escaped $!"], check=True)
    sys.stdout.flush()
subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"]).wait()
`

// TreeOptions change a ServerTree.
type TreeOptions struct {
	// Escape has the tree put a server out of itself (ServerTree.EscapedPid).
	Escape bool
}

// StartServerTree starts a ServerTree in a process group of its own, in
// dir, and kills the group when t ends. It skips t when python3 is
// missing.
func StartServerTree(t testing.TB, dir string) ServerTree {
	t.Helper()
	return StartServerTreeWith(t, dir, TreeOptions{})
}

// StartServerTreeWith is StartServerTree as o says. The escaped server
// stays in the tree's process group, so that it is killed with it.
func StartServerTreeWith(t testing.TB, dir string, o TreeOptions) ServerTree {
	t.Helper()
	NeedPython3(t)
	args := []string{"-u", "-c", serverTreeScript}
	if o.Escape {
		args = append(args, "escape")
	}
	marker := "CODEHYDRA_AGENT_ID=" + rand.Text()
	cmd := exec.Command("python3", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	t.Cleanup(stop)
	tree := ServerTree{Pid: cmd.Process.Pid, Marker: marker, Stop: stop}
	ports := make(chan [2]int, 3)
	go func() {
		// Reads to the end, so that the servers never block on output.
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var port int
			if _, err := fmt.Sscanf(sc.Text(), "own %d", &port); err == nil {
				ports <- [2]int{0, port}
			} else if _, err := fmt.Sscanf(sc.Text(), "Serving HTTP on 127.0.0.1 port %d", &port); err == nil {
				ports <- [2]int{1, port}
			} else if _, err := fmt.Sscanf(sc.Text(), "escaped %d", &port); err == nil {
				ports <- [2]int{2, port}
			}
		}
	}()
	deadline := time.After(30 * time.Second)
	for tree.OwnPort == 0 || tree.ChildPort == 0 || (o.Escape && tree.EscapedPid == 0) {
		select {
		case p := <-ports:
			switch p[0] {
			case 0:
				tree.OwnPort = p[1]
			case 1:
				tree.ChildPort = p[1]
			default:
				tree.EscapedPid = p[1]
			}
		case <-deadline:
			t.Fatalf("the server tree named its ports not in 30 s: %+v", tree)
		}
	}
	for o.Escape && tree.EscapedPort == 0 {
		b, _ := os.ReadFile(filepath.Join(dir, "escaped.log"))
		for line := range strings.Lines(string(b)) {
			_, _ = fmt.Sscanf(line, "Serving HTTP on 127.0.0.1 port %d", &tree.EscapedPort)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the escaped server named its port not in 30 s: %+v", tree)
		}
	}
	return tree
}

// TreeAgents are agents, as package previews asks about them, whose
// processes are ServerTrees: the tree is the agent's, OwnPort its own
// server's, Marker its marker.
type TreeAgents map[string]ServerTree

// AgentProcess is the root, own port and marker of the tree of the
// workspace at path.
func (a TreeAgents) AgentProcess(path string) (pid, port int, marker string, ok bool) {
	tree, ok := a[path]
	return tree.Pid, tree.OwnPort, tree.Marker, ok
}
