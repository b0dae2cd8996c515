//go:build unix

package proc

import (
	"os"
	"syscall"
)

// tree is a process group whose leader is the started process.
type tree struct{ pgid int }

func newTree(p *os.Process) (tree, error) { return tree{pgid: p.Pid}, nil }

func (t tree) terminate() { t.signal(syscall.SIGTERM) }
func (t tree) kill()      { t.signal(syscall.SIGKILL) }
func (t tree) release()   {}

// signal signals the whole group. A group that is gone is fine.
func (t tree) signal(sig syscall.Signal) {
	if t.pgid <= 1 {
		return // never init's group, nor "every process"
	}
	_ = syscall.Kill(-t.pgid, sig)
}

// killPid kills a process that has no tree yet.
func killPid(p *os.Process) { _ = p.Kill() }
