package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"codehydra/internal/proc"
	"codehydra/internal/sandbox"
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

// Run runs o.Argv and waits for it. It starts it in a process tree of
// its own (confined when o.Sandbox is set); when the timeout passes or
// ctx ends it asks the tree to end and, after the grace, kills it; and
// once the command's own process has ended, it kills whatever is left of
// the tree, so no child the task started outlives the run. The error is
// only for a command that could not start; a failing command is a Result
// with its exit code.
func Run(ctx context.Context, o RunOptions) (Result, error) {
	o = o.withDefaults()
	if len(o.Argv) == 0 {
		return Result{}, errors.New("run task: no command")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("run task: output pipe: %w", err)
	}
	defer pr.Close()
	start := time.Now()
	p, err := proc.Start(ctx, proc.Options{
		Path: o.Argv[0], Args: o.Argv[1:], Dir: o.Dir,
		Env:    append(taskEnv(os.Environ()), o.Env...),
		Stdout: pw, Stderr: pw,
		Sandbox: o.Sandbox,
	})
	pw.Close()
	if err != nil {
		return Result{}, err
	}
	out := newTail(o.MaxOutput)
	read := make(chan struct{})
	go func() { defer close(read); _, _ = out.ReadFrom(pr) }()

	res := supervise(ctx, p, o, start, out)
	select {
	case <-read:
	case <-time.After(pipeGrace):
		pr.Close()
		<-read
	}
	res.Duration = time.Since(start)
	res.Output, res.Bytes, res.Dropped = out.result()
	return res, nil
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

// tail keeps the last max bytes written to it, in a buffer of at most
// twice that, and counts all of them.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func newTail(max int) *tail { return &tail{max: max, buf: make([]byte, 0, 2*max)} }

// ReadFrom copies r into the tail until r ends.
func (t *tail) ReadFrom(r interface{ Read([]byte) (int, error) }) (int64, error) {
	chunk := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(chunk)
		if k > 0 {
			t.write(chunk[:k])
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

func (t *tail) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return
	}
	if len(t.buf)+len(p) > cap(t.buf) {
		// Keep the last max-len(p) bytes, so that p fits and the buffer
		// never grows past its capacity.
		keep := t.buf[len(t.buf)-min(len(t.buf), t.max-len(p)):]
		t.buf = t.buf[:copy(t.buf, keep)]
	}
	t.buf = append(t.buf, p...)
}

// result is the kept output (starting at a whole character), all bytes
// written and how many of them are not kept.
func (t *tail) result() (string, int64, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.buf[len(t.buf)-min(len(t.buf), t.max):]
	for i := 0; i < utf8.UTFMax && len(kept) > 0 && !utf8.RuneStart(kept[0]); i++ {
		kept = kept[1:]
	}
	return string(kept), t.total, t.total - int64(len(kept))
}

// progress is the last non-empty line so far, cut at maxLineShown, and
// all bytes written.
func (t *tail) progress() (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := bytes.TrimRight(t.buf, "\r\n")
	if i := bytes.LastIndexAny(b, "\r\n"); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > maxLineShown {
		b = b[len(b)-maxLineShown:]
	}
	return string(bytes.ToValidUTF8(b, nil)), t.total
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
