package prepare

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"codehydra/internal/proc"
	"codehydra/internal/sandbox"
)

// Limits of what a setup's output costs: the log gets at most maxLogLines
// lines of at most maxLineBytes each; a failure quotes the last tailLines.
const (
	maxLogLines  = 2000
	maxLineBytes = 1000
	tailLines    = 20
)

// Command is a setup (or a teardown) to run: argv without a shell, in
// Dir, within Timeout.
type Command struct {
	// What names the command in its error: "setup" when empty, "teardown".
	What    string
	Argv    []string
	Dir     string
	Timeout time.Duration
	// Sandbox, when set, confines the setup and all it starts; Env is
	// added to its environment (the sandbox's TMPDIR).
	Sandbox *sandbox.Policy
	Env     []string
	// Line receives each line of output (stdout and stderr together), cut
	// to maxLineBytes, up to maxLogLines of them; then one line saying the
	// rest is left out.
	Line func(string)
}

// SetupError is a setup (or a teardown) that did not succeed: why, and
// its last lines.
type SetupError struct {
	// What is "setup" when empty, or "teardown".
	What string
	// Reason is a sentence: "exited with code 2", "ran longer than 10m0s and
	// was stopped", "could not start: …".
	Reason string
	// Tail are the last lines of output.
	Tail []string
	// ExitCode is the process's exit code, -1 when it did not exit itself.
	ExitCode int
}

func (e *SetupError) Error() string {
	what := e.What
	if what == "" {
		what = "setup"
	}
	if len(e.Tail) == 0 {
		return what + " " + e.Reason
	}
	return what + " " + e.Reason + "; last output:\n" + strings.Join(e.Tail, "\n")
}

// Run runs c and waits for it. It starts the command in a process tree
// of its own (confined when c.Sandbox is set) and, when the timeout
// passes or ctx ends, kills that whole tree; what the setup left running
// is killed too once it ended, success or not. A failure is a
// *SetupError.
func Run(ctx context.Context, c Command) error {
	if len(c.Argv) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	pr, pw := io.Pipe()
	tail := make(chan []string, 1)
	go func() { tail <- readLines(pr, c.Line) }()
	p, err := proc.Start(ctx, proc.Options{
		Path: c.Argv[0], Args: c.Argv[1:], Dir: c.Dir,
		Env:    append(os.Environ(), c.Env...),
		Stdout: pw, Stderr: pw,
		// A grandchild outside the tree may hold the output open; the
		// setup is over when its own process is.
		WaitDelay: 2 * time.Second,
		Sandbox:   c.Sandbox,
	})
	if err == nil {
		select {
		case <-p.Done():
		case <-ctx.Done():
			p.Kill()
		}
		err = p.Err()
		if errors.Is(err, exec.ErrWaitDelay) && p.State().Success() {
			// It succeeded; only a leftover held its output open.
			err = nil
		}
	} else {
		err = startError{err}
	}
	pw.Close()
	last := <-tail
	return setupResult(ctx, c, err, last)
}

// startError is a setup that did not start.
type startError struct{ error }

func (e startError) Unwrap() error { return e.error }

// setupResult turns what Wait returned into nil or a *SetupError.
func setupResult(ctx context.Context, c Command, err error, tail []string) error {
	if err == nil {
		return nil
	}
	se := &SetupError{What: c.What, Tail: tail, ExitCode: -1}
	var exit *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		se.Reason = fmt.Sprintf("ran longer than its timeout (%s) and was stopped with every process it started", c.Timeout)
	case ctx.Err() != nil:
		se.Reason = "was stopped: CodeHydra is shutting down or the workspace went away"
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		se.ExitCode = exit.ExitCode()
		se.Reason = fmt.Sprintf("%s failed with exit code %d", commandLine(c.Argv), se.ExitCode)
	case errors.As(err, &exit):
		se.Reason = fmt.Sprintf("%s was ended by %s", commandLine(c.Argv), exit.ProcessState)
	case errors.Is(err, proc.ErrNotConfined):
		se.Reason = fmt.Sprintf("%q was not started: %v", c.Argv[0], err)
	default:
		se.Reason = fmt.Sprintf("could not start %q: %v", c.Argv[0], err)
	}
	return se
}

// commandLine is argv as the user would write it in the settings, in
// double quotes: a word with a space or a shell character in single
// quotes, so that `sh -c 'make; exit 3'` does not read as sh -c make.
func commandLine(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = w
		if w == "" || strings.ContainsFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=@%+,-", r))
		}) {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return `"` + strings.Join(words, " ") + `"`
}

// readLines passes each line of r to line (capped) and returns the last
// tailLines lines.
func readLines(r io.Reader, line func(string)) []string {
	br := bufio.NewReader(r)
	var tail []string
	n := 0
	for {
		s, err := br.ReadString('\n')
		s = strings.TrimRight(s, "\r\n")
		if s != "" || err == nil {
			if len(s) > maxLineBytes {
				s = s[:maxLineBytes] + "…"
			}
			tail = append(tail, s)
			if len(tail) > tailLines {
				tail = tail[1:]
			}
			n++
			switch {
			case line == nil:
			case n <= maxLogLines:
				line(s)
			case n == maxLogLines+1:
				line(fmt.Sprintf("(more output left out of the log after %d lines)", maxLogLines))
			}
		}
		if err != nil {
			// EOF: Run closed the pipe once the process was done.
			return tail
		}
	}
}
