// Package proc is the one door through which CodeHydra starts the
// processes it runs for workspaces and the user (agents, tasks, setups,
// MCP servers): each in a process tree of its own (a process group; a job
// object on Windows), optionally confined by the kernel (package
// sandbox), and ended as a whole tree, so that nothing it started
// outlives it.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"codehydra/internal/reap"
	"codehydra/internal/sandbox"
)

// Options say what to start and how.
type Options struct {
	// Path is the program: a name without a path separator is looked up
	// in PATH, a relative path is taken relative to Dir.
	Path string
	// Args are its arguments (argv without argv[0], which is Path).
	Args []string
	Dir  string
	// Env is its environment (nil: this process's).
	Env []string
	// Stdin, Stdout and Stderr are as in exec.Cmd (nil: the null device).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// WaitDelay bounds the wait for Stdout and Stderr to be copied once
	// the process is gone, as in exec.Cmd (0: no bound).
	WaitDelay time.Duration
	// Sandbox, when set, confines the process and all it starts to the
	// policy. It starts as a re-exec of Self running the sandbox helper,
	// which applies the policy and execs Path.
	Sandbox *sandbox.Policy
	// Self is the binary that runs the sandbox helper ("": this process's
	// own, which must call sandbox.RunHelperIfAsked first thing).
	Self string
	// Spawner, when set, starts the process from its long-lived thread
	// so that, on Linux, the process dies with CodeHydra (see
	// reap.Spawner); without it the process outlives a crashed app until
	// a reaper or the user ends it.
	Spawner *reap.Spawner
	// Marker, when set, is an entry (NAME=value, random per process) of
	// Env that everything the process starts inherits. On Linux and macOS
	// Terminate, Kill and Stop then reach the processes that carry it and
	// left the tree (setsid, a daemon) too, but the process's own end does
	// not: a task may start a daemon on purpose (EndMarked ends it later).
	// A job object keeps them on Windows.
	Marker string
}

// Process is a started process and the tree it heads.
type Process struct {
	cmd  *exec.Cmd
	name string // the program, as Options.Path gave it
	tree tree
	// Sandbox is what was enforced on the process: Enforced is false when
	// it was started without a policy.
	Sandbox sandbox.Status
	marker  string
	done    chan struct{}
	err     error
}

// ErrNotConfined is in the error of a start whose sandbox could not be
// enforced: the program did not run.
var ErrNotConfined = errors.New("could not confine it")

// outcomeWait bounds how long Start waits for the sandbox helper to say
// what it enforced: it has only to build its rules and exec.
const outcomeWait = 30 * time.Second

// Start starts o.Path in a tree of its own. It returns once the process
// runs (for a confined one: once the helper has confined itself and
// exec'd the program). A goroutine waits for the process; once it has
// ended, whatever is left of its tree is killed and Done is closed.
func Start(ctx context.Context, o Options) (*Process, error) {
	path := o.Path
	if !hasSeparator(path) {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", o.Path, err)
		}
		path = lp
	}
	if o.Marker != "" && !slices.Contains(o.Env, o.Marker) {
		return nil, fmt.Errorf("start %s: the marker is not in its environment", o.Path)
	}
	cmd := exec.Command(path, o.Args...)
	cmd.Args[0] = o.Path
	cmd.Dir, cmd.Env = o.Dir, o.Env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	cmd.WaitDelay = o.WaitDelay
	cmd.SysProcAttr = sysProcAttr(o.Spawner != nil)

	var outcome *os.File
	if o.Sandbox != nil {
		if !sandbox.Supported {
			return nil, fmt.Errorf("start %s: %w: %s", o.Path, ErrNotConfined, sandbox.Probe().Reason)
		}
		args, env, err := sandbox.HelperArgs(path, cmd.Args, *o.Sandbox)
		if err != nil {
			return nil, err
		}
		self := o.Self
		if self == "" {
			self = selfExe()
		}
		cmd.Path = self
		cmd.Args = append([]string{os.Args[0]}, args...)
		cmd.Env = append(slices.Clip(cmd.Env), env)
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("start %s: sandbox pipe: %w", o.Path, err)
		}
		defer r.Close()
		cmd.ExtraFiles = []*os.File{w}
		outcome = r
	}

	start := cmd.Start
	if o.Spawner != nil {
		start = func() error { return o.Spawner.Start(ctx, cmd) }
	}
	err := start()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the helper holds its own copy
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Path, err)
	}
	p := &Process{cmd: cmd, name: o.Path, done: make(chan struct{})}
	p.tree, err = newTree(cmd.Process, o.Marker)
	p.marker = o.Marker
	if err != nil {
		// A tree that would outlive CodeHydra is not started at all.
		killPid(cmd.Process)
		_ = cmd.Wait()
		return nil, fmt.Errorf("start %s: %w", o.Path, err)
	}
	if outcome != nil {
		st, err := readOutcome(ctx, outcome)
		if err != nil {
			p.tree.kill()
			_ = cmd.Wait()
			p.tree.release()
			return nil, fmt.Errorf("start %s: %w: %w", o.Path, ErrNotConfined, err)
		}
		p.Sandbox = st
	}
	go p.wait()
	return p, nil
}

// readOutcome reads what the sandbox helper reported, within ctx and
// outcomeWait.
func readOutcome(ctx context.Context, r *os.File) (sandbox.Status, error) {
	type result struct {
		st  sandbox.Status
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, err := sandbox.ReadOutcome(r)
		ch <- result{st, err}
	}()
	t := time.NewTimer(outcomeWait)
	defer t.Stop()
	select {
	case res := <-ch:
		return res.st, res.err
	case <-ctx.Done():
		return sandbox.Status{}, ctx.Err()
	case <-t.C:
		return sandbox.Status{}, fmt.Errorf("the sandbox helper said nothing within %s", outcomeWait)
	}
}

func (p *Process) wait() {
	p.err = p.cmd.Wait()
	// Whatever the process left behind in its tree goes with it; what
	// left the tree stays (see Options.Marker).
	p.tree.killGroup()
	p.tree.release()
	close(p.done)
}

// Pid is the process's id (on Unix also its tree's process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has ended, been waited for, and the
// rest of its tree killed.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended (as exec.Cmd.Wait says); valid after Done.
func (p *Process) Err() error { <-p.done; return p.err }

// State is the process's exit state; valid after Done (nil if it could
// not be waited for).
func (p *Process) State() *os.ProcessState { <-p.done; return p.cmd.ProcessState }

// Running reports whether the process has not been waited for yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Terminate asks the whole tree to end (SIGTERM to the process group).
// Windows has no such request for processes without a console: there it
// ends the tree at once, as Kill does.
func (p *Process) Terminate() {
	if p.Running() {
		p.tree.terminate()
	}
}

// Kill ends the whole tree at once.
func (p *Process) Kill() {
	if p.Running() {
		p.tree.kill()
	}
}

// Stop ends the tree: Terminate, then Kill once grace has passed, then
// waits until the process is gone. ctx bounds the whole wait.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	start := time.Now()
	p.Terminate()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		// What left the tree has the rest of the grace too.
		EndMarked(ctx, p.marker, grace-time.Since(start))
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.Kill()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop %s (pid %d): %w", p.name, p.Pid(), ctx.Err())
	}
}

// EndMarked ends the processes that carry marker (see Options.Marker),
// wherever they are: SIGTERM, then SIGKILL once grace has passed. It
// returns once none is left, or ctx ends. Windows has none to end (a job
// object holds them).
func EndMarked(ctx context.Context, marker string, grace time.Duration) {
	if marker == "" {
		return
	}
	termed := reap.SignalMarked(marker, syscall.SIGTERM) > 0
	deadline := time.NewTimer(max(grace, 0))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if markedGone(marker) {
			return
		}
		if !termed {
			termed = reap.SignalMarked(marker, syscall.SIGTERM) > 0
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		killMarked(marker)
		return
	}
}

// markedGone reports whether no process carries marker, in two looks a
// moment apart: a process in the middle of an exec may show no
// environment for an instant.
func markedGone(marker string) bool {
	if reap.SignalMarked(marker, nil) > 0 {
		return false
	}
	time.Sleep(10 * time.Millisecond)
	return reap.SignalMarked(marker, nil) == 0
}

// killMarked kills the processes that carry marker, in a few rounds a
// moment apart (one may fork, or be in the middle of an exec, while they
// are found).
func killMarked(marker string) {
	if marker == "" {
		return
	}
	for i := range 3 {
		if i > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		reap.SignalMarked(marker, syscall.SIGKILL)
	}
}

func hasSeparator(path string) bool {
	for i := 0; i < len(path); i++ {
		if os.IsPathSeparator(path[i]) {
			return true
		}
	}
	return false
}
