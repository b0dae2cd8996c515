package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"codehydra/internal/gitenv"
)

// gitRunner runs the git command line. Process spawning and the environment
// come in through fields so tests can put a wrapper around real git.
type gitRunner struct {
	// path is the git executable; "git" looks it up in PATH.
	path string
	// command builds the process; exec.CommandContext by default.
	command func(ctx context.Context, name string, arg ...string) *exec.Cmd
	// environ is the environment git starts from; os.Environ by default.
	environ func() []string
	// gone, when set, reports whether dir is a workspace a delete took
	// away; a failure there is then CodeWorkspaceNotFound (see gone.go).
	gone func(dir string) bool
	// pin, when set, returns the git folders that a command in dir must
	// use (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE) when dir is a
	// workspace, instead of what its .git file (its agent's to write)
	// says; an error keeps the command from running.
	pin func(dir string) ([]string, error)
}

func newGitRunner(path string) *gitRunner {
	if path == "" {
		path = "git"
	}
	return &gitRunner{path: path, command: exec.CommandContext, environ: os.Environ}
}

// gitError is a git command that failed. Its message carries git's stderr,
// which is what tells a user what went wrong.
type gitError struct {
	Args     []string
	Dir      string
	ExitCode int
	Stderr   string
	Err      error
}

func (e *gitError) Error() string {
	msg := fmt.Sprintf("git %s (in %s)", strings.Join(e.Args, " "), e.Dir)
	if e.Stderr != "" {
		return msg + ": " + e.Stderr
	}
	return msg + ": " + e.Err.Error()
}

func (e *gitError) Unwrap() error { return e.Err }

// exitCode returns git's exit code when err is a git failure, else -1.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// stderrOf returns git's stderr when err is a git failure.
func stderrOf(err error) string {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.Stderr
	}
	return ""
}

// env is the environment of a git that CodeHydra runs (see gitenv.Env:
// none of the repository's code runs), with extra added.
func (g *gitRunner) env(extra []string) []string { return gitenv.Env(g.environ(), extra...) }

// run runs git with args in dir and returns its stdout.
func (g *gitRunner) run(ctx context.Context, dir string, args ...string) (string, error) {
	return g.runEnv(ctx, dir, nil, args...)
}

// runEnv is run with extra environment variables.
func (g *gitRunner) runEnv(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	out, err := g.runWith(ctx, dir, extra, nil, args...)
	if ge, ok := err.(*gitError); ok && g.gone != nil && g.gone(dir) {
		return "", goneError(dir, ge)
	}
	return out, err
}

// runTo is runEnv with git's stdout written to w instead of returned:
// for output too large to keep whole.
func (g *gitRunner) runTo(ctx context.Context, dir string, extra []string, w io.Writer, args ...string) error {
	err := g.exec(ctx, dir, extra, nil, w, args...)
	if ge, ok := err.(*gitError); ok && g.gone != nil && g.gone(dir) {
		return goneError(dir, ge)
	}
	return err
}

// runWith runs git with args in dir, extra environment variables and stdin
// (nil for none), and returns its stdout. A failure of git itself is a
// *gitError.
func (g *gitRunner) runWith(ctx context.Context, dir string, extra []string, stdin io.Reader, args ...string) (string, error) {
	var stdout bytes.Buffer
	if err := g.exec(ctx, dir, extra, stdin, &stdout, args...); err != nil {
		return "", err
	}
	return stdout.String(), nil
}

// exec runs git as runWith does, its stdout written to stdout.
func (g *gitRunner) exec(ctx context.Context, dir string, extra []string, stdin io.Reader, stdout io.Writer, args ...string) error {
	if g.pin != nil {
		pinned, err := g.pin(dir)
		if err != nil {
			return &gitError{Args: args, Dir: dir, ExitCode: -1, Err: err}
		}
		extra = append(slices.Clip(extra), pinned...)
	}
	cmd := g.command(ctx, g.path, args...)
	cmd.Dir = dir
	cmd.Env = g.env(extra)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stdout = stdout
	cmd.Stderr = &stderr
	// A git that ignores the kill (e.g. a hook holding the pipes) must not
	// hang the caller forever.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), ctxErr)
	}
	ge := &gitError{Args: args, Dir: dir, ExitCode: -1, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.ExitCode = ee.ExitCode()
	}
	return ge
}

// Git's messages about a lock file that another process holds.
var (
	lockFileRe   = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)
	lockConfigRe = regexp.MustCompile(`could not lock config file ([^\n]+?)(?:: File exists)?(?:\n|$)`)
)

// lockHeld reports the lock file named by a git failure caused by another
// git process (index.lock, config.lock, a ref's lock), as an absolute path.
func lockHeld(err error) (string, bool) {
	var ge *gitError
	if !errors.As(err, &ge) {
		return "", false
	}
	if m := lockFileRe.FindStringSubmatch(ge.Stderr); m != nil {
		return absIn(ge.Dir, m[1]), true
	}
	if m := lockConfigRe.FindStringSubmatch(ge.Stderr); m != nil {
		// Some commands (--remove-section) do not say why the lock
		// failed; a lock file that exists is the reason worth telling.
		lock := absIn(ge.Dir, m[1]+".lock")
		if _, err := os.Lstat(lock); err == nil || strings.Contains(m[0], "File exists") {
			return lock, true
		}
	}
	return "", false
}

func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// classify turns a git failure into an *Error for callers: a held lock is a
// CodeConflict that says which file; anything else gets code and a message
// saying what was being done, with git's own words kept as the cause.
func classify(err error, code Code, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	msg := fmt.Sprintf(format, args...)
	if lock, ok := lockHeld(err); ok {
		return &Error{Code: CodeConflict, Message: fmt.Sprintf("%s: another git process holds %s; try again when it finishes", msg, lock), Err: err}
	}
	return &Error{Code: code, Message: msg, Err: err}
}
