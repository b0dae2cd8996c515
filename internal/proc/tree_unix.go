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

// kill kills the group, then the marked processes outside it until none is
// left (one may fork while they are found), a few rounds at most.
func (t tree) kill() {
	t.signal(syscall.SIGKILL)
	for range 3 {
		if t.marker == "" || reap.SignalMarked(t.marker, syscall.SIGKILL) == 0 {
			return
		}
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
