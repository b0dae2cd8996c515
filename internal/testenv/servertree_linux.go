package testenv

import (
	"bufio"
	"fmt"
	"os/exec"
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
	// Stop kills the tree and waits for its root; the end of the test
	// does it too.
	Stop func()
}

// serverTreeScript is the root: it listens, says on which port, and runs
// the http.server until it is killed.
const serverTreeScript = `
import socket, subprocess, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print("own", s.getsockname()[1], flush=True)
subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"]).wait()
`

// StartServerTree starts a ServerTree in a process group of its own, in
// dir, and kills the group when t ends. It skips t when python3 is
// missing.
func StartServerTree(t testing.TB, dir string) ServerTree {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command("python3", "-u", "-c", serverTreeScript)
	cmd.Dir = dir
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
	tree := ServerTree{Pid: cmd.Process.Pid, Stop: stop}
	ports := make(chan [2]int, 2)
	go func() {
		// Reads to the end, so that the servers never block on output.
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var port int
			if _, err := fmt.Sscanf(sc.Text(), "own %d", &port); err == nil {
				ports <- [2]int{0, port}
			} else if _, err := fmt.Sscanf(sc.Text(), "Serving HTTP on 127.0.0.1 port %d", &port); err == nil {
				ports <- [2]int{1, port}
			}
		}
	}()
	deadline := time.After(30 * time.Second)
	for tree.OwnPort == 0 || tree.ChildPort == 0 {
		select {
		case p := <-ports:
			if p[0] == 0 {
				tree.OwnPort = p[1]
			} else {
				tree.ChildPort = p[1]
			}
		case <-deadline:
			t.Fatalf("the server tree named its ports not in 30 s: %+v", tree)
		}
	}
	return tree
}

// TreeAgents are agents, as package previews asks about them, whose
// processes are ServerTrees: the tree is the agent's, OwnPort its own
// server's.
type TreeAgents map[string]ServerTree

// AgentProcess is the root and own port of the tree of the workspace at
// path.
func (a TreeAgents) AgentProcess(path string) (pid, port int, ok bool) {
	tree, ok := a[path]
	return tree.Pid, tree.OwnPort, ok
}
