//go:build unix

package proc

import (
	"os"
	"syscall"

	"codehydra/internal/reap"
)

// tree is a process group whose leader is the started process, and the
// processes that carry its marker wherever they went.
type tree struct {
	pgid   int
	marker string
}

func newTree(p *os.Process, marker string) (tree, error) {
	return tree{pgid: p.Pid, marker: marker}, nil
}

func (t tree) terminate() { t.signal(syscall.SIGTERM) }
func (t tree) release()   {}

// kill kills the group, then the marked processes outside it.
func (t tree) kill() {
	t.killGroup()
	killMarked(t.marker)
}

// killGroup kills the group only.
func (t tree) killGroup() {
	if t.pgid > 1 { // never init's group, nor "every process"
		_ = syscall.Kill(-t.pgid, syscall.SIGKILL)
	}
}

// signal signals the whole group and the marked processes that left it. A
// group that is gone is fine.
func (t tree) signal(sig syscall.Signal) {
	if t.pgid <= 1 {
		return // never init's group, nor "every process"
	}
	_ = syscall.Kill(-t.pgid, sig)
	if t.marker != "" {
		reap.SignalMarked(t.marker, sig)
	}
}

// killPid kills a process that has no tree yet.
func killPid(p *os.Process) { _ = p.Kill() }
