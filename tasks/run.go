package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"codehydra/internal/proc"
	"codehydra/internal/reap"
	"codehydra/internal/sandbox"
	"codehydra/workspace"
)

// Defaults of RunOptions.
const (
	DefaultMaxOutput     = 64 << 10
	DefaultGrace         = 3 * time.Second
	DefaultProgressEvery = time.Second
	// maxLineShown bounds the output line a progress report quotes.
	maxLineShown = 200
	// pipeGrace bounds the wait for the output pipe once the task's group
	// is gone: a process that left the group (setsid) may still hold it.
	pipeGrace = 2 * time.Second
)

// RunOptions say what to run and within which bounds.
type RunOptions struct {
	// Argv is the command line (see Argv), run without a shell in Dir.
	Argv []string
	Dir  string
	// Timeout ends the run (its whole process group) when it passes.
	// Required.
	Timeout time.Duration
	// MaxOutput is how much of the end of the combined output is kept.
	// Default DefaultMaxOutput.
	MaxOutput int
	// Grace is how long the group has between SIGTERM and SIGKILL.
	// Default DefaultGrace.
	Grace time.Duration
	// Sandbox, when set, confines the task and all it starts; Env is
	// added to its environment (the sandbox's TMPDIR).
	Sandbox *sandbox.Policy
	Env     []string
	// Progress, when set, is called every ProgressEvery while the task
	// runs (default DefaultProgressEvery).
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is a report on a running task.
type Progress struct {
	Elapsed time.Duration
	// Line is the last line of output so far (cut at 200 bytes).
	Line string
	// Bytes is the output so far.
	Bytes int64
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the process's exit code; -1 when it did not exit by
	// itself (a signal, the timeout, a cancel).
	ExitCode int
	// Ended describes the end, e.g. "exit status 2" or "signal: killed".
	Ended string
	// TimedOut and Cancelled say why a run was stopped.
	TimedOut, Cancelled bool
	// Output is the end of the combined stdout and stderr, at most
	// MaxOutput bytes, starting at a whole UTF-8 character.
	Output string
	// Bytes is all the output; Dropped how much of its start is not in
	// Output.
	Bytes, Dropped int64
	Duration       time.Duration
}

// RunAndWait runs o.Argv and waits for it. It starts it in a process tree of
// its own (confined when o.Sandbox is set); when the timeout passes or
// ctx ends it asks the tree to end and, after the grace, kills it; and
// once the command's own process has ended, it kills whatever is left of
// the tree, so no child the task started outlives the run. The error is
// only for a command that could not start; a failing command is a Result
// with its exit code.
func RunAndWait(ctx context.Context, o RunOptions) (Result, error) {
	o = o.withDefaults()
	began := time.Now()
	p, err := start(ctx, launch{argv: o.Argv, dir: o.Dir, workspace: o.Dir, env: o.Env, sandbox: o.Sandbox, maxOutput: o.MaxOutput})
	if err != nil {
		return Result{}, fmt.Errorf("run task: %w", err)
	}
	res := supervise(ctx, p.Process, o, began, p.out)
	p.drain()
	res.Duration = time.Since(began)
	res.Output, res.Bytes, res.Dropped = p.out.result()
	return res, nil
}

// launch says how to start a task's process, in the foreground (Run) or
// in the background (Runs.Start).
type launch struct {
	argv []string
	dir  string
	// workspace is the folder whose port block the task gets.
	workspace string
	// env is added to the task's environment (see environ).
	env       []string
	sandbox   *sandbox.Policy
	spawner   *reap.Spawner
	maxOutput int
	// marker, when set, is the entry of env that marks the run's
	// processes (see proc.Options.Marker).
	marker string
}

// process is a task's started process and the tail of its output.
type process struct {
	*proc.Process
	out  *tail
	pipe *os.File
	read chan struct{} // closed once the pipe is drained
}

// start starts l.argv, without a shell, in a process tree of its own
// (proc.Start), its stdout and stderr read into one tail.
func start(ctx context.Context, l launch) (*process, error) {
	if len(l.argv) == 0 {
		return nil, errors.New("no command")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	p, err := proc.Start(ctx, proc.Options{
		Path: l.argv[0], Args: l.argv[1:], Dir: l.dir,
		Env:    environ(l.workspace, l.env),
		Stdout: pw, Stderr: pw,
		Sandbox: l.sandbox,
		Spawner: l.spawner,
		Marker:  l.marker,
	})
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	t := &process{Process: p, out: newTail(l.maxOutput), pipe: pr, read: make(chan struct{})}
	go func() { defer close(t.read); _, _ = t.out.ReadFrom(pr) }()
	return t, nil
}

// drain waits, once the process is gone, for the rest of its output, at
// most pipeGrace.
func (p *process) drain() {
	select {
	case <-p.read:
	case <-time.After(pipeGrace):
	}
	p.pipe.Close()
	<-p.read
}

// environ is the environment of a task of the workspace at ws:
// CodeHydra's own without makeVars, the workspace's ports when it has a
// block (workspace.PortBlock.Env), and extra.
func environ(ws string, extra []string) []string {
	env := taskEnv(os.Environ())
	if b, ok := workspace.PortsOf(ws); ok {
		env = append(env, b.Env()...)
	}
	return append(env, extra...)
}

// supervise waits for p, reporting progress and stopping its tree on
// timeout or cancel.
func supervise(ctx context.Context, p *proc.Process, o RunOptions, start time.Time, out *tail) Result {
	tctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tick := time.NewTicker(o.ProgressEvery)
	defer tick.Stop()
	var res Result
	var kill <-chan time.Time
	stopping := tctx.Done()
	for {
		select {
		case <-p.Done():
			res.ExitCode, res.Ended = -1, "did not start"
			if st := p.State(); st != nil {
				res.ExitCode, res.Ended = st.ExitCode(), st.String()
			} else if err := p.Err(); err != nil {
				res.Ended = err.Error()
			}
			return res
		case <-stopping:
			stopping = nil
			res.Cancelled = ctx.Err() != nil
			res.TimedOut = !res.Cancelled
			p.Terminate()
			kill = time.After(o.Grace)
		case <-kill:
			p.Kill()
		case <-tick.C:
			if o.Progress != nil {
				line, n := out.progress()
				o.Progress(Progress{Elapsed: time.Since(start), Line: line, Bytes: n})
			}
		}
	}
}

func (o RunOptions) withDefaults() RunOptions {
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	return o
}

// makeVars are what a make that started CodeHydra (e.g. `make run`) left
// in its environment for its own sub-makes. A task's make is not one of
// them: with these it would print "make[1]: Entering directory" lines and
// take the outer make's flags.
var makeVars = []string{"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"}

// taskEnv is env without makeVars.
func taskEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(makeVars, name) {
			out = append(out, kv)
		}
	}
	return out
}
