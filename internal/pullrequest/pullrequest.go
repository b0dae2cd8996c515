// Package pullrequest opens a workspace's pull request: it pushes the
// workspace's branch to its project's remote (workspace.Manager.Push),
// runs the user's prCommand, or gh's, in the workspace, and records the
// URL the command printed as the workspace's metadata "pr". The MCP tool
// workspace_create_pr and the tray both use it.
//
// The command is the user's own program, from the user's settings, run for
// the user as an editor is: outside the kernel sandbox, since it needs
// what the sandbox hides from agents on purpose (gh's token in
// ~/.config/gh, the keyring, ~/.ssh, ~/.git-credentials) and the network.
// What an agent controls reaches it only as the values of {title} and
// {body}, each inside one argument, never through a shell; the git it
// runs in the workspace gets CodeHydra's own git environment (no hook or
// fsmonitor, git's folders pinned), so the workspace's .git cannot steer
// it.
package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"codehydra/internal/proc"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

// MetadataKey is the workspace metadata key the pull request's URL is
// recorded under.
const MetadataKey = workspace.MetadataPR

// Bounds of a pull request command.
const (
	// DefaultTimeout ends the command, with every process it started.
	DefaultTimeout = 2 * time.Minute
	// maxStdout is how much of the end of its stdout is searched for the
	// URL; maxStderr how much of the end of its stderr an error quotes.
	maxStdout = 64 << 10
	maxStderr = 2 << 10
	// maxTitle and maxBody bound what a caller may pass (an argument of
	// a Linux command line holds at most 128 KiB).
	maxTitle = 1000
	maxBody  = 64 << 10
)

// Workspaces is the part of workspace.Manager a Creator needs.
type Workspaces interface {
	Resolve(path string) (workspace.Workspace, error)
	Push(ctx context.Context, wsPath string, o workspace.PushOptions) (workspace.PullRequest, error)
	GitEnv(dir string) ([]string, error)
	SetMetadata(ctx context.Context, wsPath, key string, value *string) error
}

// Options say what a Creator works with.
type Options struct {
	Workspaces Workspaces
	// Settings returns the settings as they are now: prCommand and each
	// project's remote.
	Settings func() settings.Settings
	// LookPath finds gh when prCommand is ""; exec.LookPath by default.
	LookPath func(file string) (string, error)
	// Timeout bounds the command and PushTimeout the push; each is
	// DefaultTimeout when 0.
	Timeout, PushTimeout time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Creator opens pull requests.
type Creator struct {
	o Options
}

// New returns a Creator.
func New(o Options) *Creator {
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PushTimeout == 0 {
		o.PushTimeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Creator{o: o}
}

// MaxDuration is how long a Create may take at most: the push and the
// command each have the timeout.
func (c *Creator) MaxDuration() time.Duration { return c.o.PushTimeout + c.o.Timeout }

// Create pushes the branch of the workspace at wsPath and opens its pull
// request. When the project has no remote, or there is no command to run
// (prCommand unset and gh not on PATH), it opens none and Note says why
// and what to do; the push still happens when there is a remote. A
// command that fails is an error quoting the end of its stderr.
func (c *Creator) Create(ctx context.Context, wsPath string, o workspace.PullRequestOptions) (workspace.PullRequest, error) {
	if err := checkText(o); err != nil {
		return workspace.PullRequest{}, err
	}
	ws, err := c.o.Workspaces.Resolve(wsPath)
	if err != nil {
		return workspace.PullRequest{}, err
	}
	set := c.o.Settings()
	remote := set.RemoteFor(ws.ProjectPath)
	pushCtx, cancel := context.WithTimeout(ctx, c.o.PushTimeout)
	pr, err := c.o.Workspaces.Push(pushCtx, ws.Path, workspace.PushOptions{Remote: remote, CreatedBranchOnly: o.CreatedBranchOnly})
	cancel()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return workspace.PullRequest{}, workspace.Errorf(workspace.CodeTimeout, "the push to %s took longer than %s and was stopped; check the remote and your network", remote, c.o.PushTimeout)
	}
	if errors.Is(err, workspace.ErrNoRemote) {
		return workspace.PullRequest{Remote: remote, Branch: ws.Branch,
			Note: fmt.Sprintf("Nothing was pushed and no pull request opened: project %s has no git remote. Add one (git remote add %s <url>), then try again.", ws.ProjectPath, remote)}, nil
	}
	if err != nil {
		return workspace.PullRequest{}, err
	}

	line, program := set.PRCommand, ""
	if line == "" {
		gh, err := c.o.LookPath("gh")
		if err != nil {
			pr.Note = fmt.Sprintf("Pushed %s to %s, but no pull request was opened: gh is not on PATH and the settings' prCommand is not set. "+
				"Install gh (and run gh auth login), or set prCommand to your forge's command, then try again; or open the pull request on the forge.", pr.Branch, pr.Remote)
			return pr, nil
		}
		line, program = settings.DefaultPRCommand, gh
		if o.Title != "" {
			line = settings.DefaultPRCommandTitled
		}
	}
	argv, err := settings.ExpandPRCommand(line, settings.PRValues{Branch: pr.Branch, Base: pr.Base, Remote: pr.Remote, Title: o.Title, Body: o.Body})
	if err != nil {
		return pr, workspace.Errorf(workspace.CodeInvalidInput, "pushed %s to %s, but prCommand cannot be run: %v; fix it in the settings", pr.Branch, pr.Remote, err)
	}
	if program != "" {
		argv[0] = program
	}
	env, err := c.o.Workspaces.GitEnv(ws.Path)
	if err != nil {
		return pr, workspace.Errorf(workspace.CodeConflict, "pushed %s to %s, but the pull request command was not run: %v", pr.Branch, pr.Remote, err)
	}
	// gh asks nothing without a terminal; this says so to one that has.
	env = append(env, "GH_PROMPT_DISABLED=1")

	start := time.Now()
	out, err := c.run(ctx, argv, ws.Path, env)
	name := filepath.Base(argv[0])
	log := c.o.Logger.With("workspace", ws.Path, "remote", pr.Remote, "branch", pr.Branch, "program", name)
	if err != nil {
		log.Warn("pull request command failed", "error", err, "duration", time.Since(start))
		return pr, fmt.Errorf("pushed %s to %s, but %w", pr.Branch, pr.Remote, err)
	}
	pr.URL = lastURL(out)
	log.Info("pull request command ran", "url", pr.URL, "duration", time.Since(start))
	if pr.URL == "" {
		pr.Note = fmt.Sprintf("Pushed %s to %s and %s succeeded, but it printed no http(s) URL on stdout, so none was recorded.", pr.Branch, pr.Remote, name)
		return pr, nil
	}
	if err := c.o.Workspaces.SetMetadata(ctx, ws.Path, MetadataKey, &pr.URL); err != nil {
		pr.Note = fmt.Sprintf("The pull request is open, but its URL could not be recorded as the workspace's metadata %s: %v", MetadataKey, err)
	}
	return pr, nil
}

// checkText refuses a title or body that no command line can carry, or a
// body without a title (gh fills both from the commits, or takes both).
func checkText(o workspace.PullRequestOptions) error {
	switch {
	case o.Title == "" && o.Body != "":
		return workspace.Errorf(workspace.CodeInvalidInput, "a body was given without a title: give both, or neither to fill them from the commits")
	case strings.ContainsAny(o.Title, "\x00\r\n"):
		return workspace.Errorf(workspace.CodeInvalidInput, "the title must be one line")
	case strings.HasPrefix(o.Title, "-"):
		// A prCommand that takes the title on its own would read it as
		// an option.
		return workspace.Errorf(workspace.CodeInvalidInput, "the title must not start with '-'")
	case strings.ContainsRune(o.Body, 0):
		return workspace.Errorf(workspace.CodeInvalidInput, "the body must not hold a NUL character")
	case len(o.Title) > maxTitle || len(o.Body) > maxBody:
		return workspace.Errorf(workspace.CodeInvalidInput, "the title may have %d bytes and the body %d at most", maxTitle, maxBody)
	case !utf8.ValidString(o.Title) || !utf8.ValidString(o.Body):
		return workspace.Errorf(workspace.CodeInvalidInput, "the title and body must be UTF-8 text")
	}
	return nil
}

// run runs argv in dir without a shell, in a process tree of its own that
// is killed when the timeout passes or ctx ends, and returns the end of
// its stdout. A failure is a *workspace.Error quoting the end of its
// stderr, with the credentials of any URL taken out.
func (c *Creator) run(ctx context.Context, argv []string, dir string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	stdout, stderr := newTail(maxStdout), newTail(maxStderr)
	p, err := proc.Start(ctx, proc.Options{
		Path: argv[0], Args: argv[1:], Dir: dir, Env: env,
		Stdout: stdout, Stderr: stderr,
		// A grandchild outside the tree may hold the output open; the
		// command is over when its own process is.
		WaitDelay: 2 * time.Second,
	})
	if err != nil {
		return "", workspace.Errorf(workspace.CodeInvalidInput, "the pull request command %s could not start: %v; check prCommand in the settings", argv[0], err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
	}
	err = p.Err()
	if errors.Is(err, exec.ErrWaitDelay) && p.State().Success() {
		err = nil
	}
	name := filepath.Base(argv[0])
	switch {
	case err == nil:
		return stdout.String(), nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", workspace.Errorf(workspace.CodeTimeout, "%s ran longer than %s and was stopped", name, c.o.Timeout)
	case ctx.Err() != nil:
		return "", ctx.Err()
	}
	msg := fmt.Sprintf("%s failed (%s)", name, p.State())
	if said := strings.TrimSpace(stderr.String()); said != "" {
		msg += ": " + workspace.RedactCredentials(said)
	}
	return "", &workspace.Error{Code: workspace.CodeInternal, Message: msg}
}

// urlRe finds http(s) URLs in a command's output.
var urlRe = regexp.MustCompile(`https?://[^\s"'<>` + "`" + `]+`)

// lastURL is the last http(s) URL in out, without the punctuation that
// ends a sentence around it.
func lastURL(out string) string {
	all := urlRe.FindAllString(out, -1)
	if len(all) == 0 {
		return ""
	}
	return strings.TrimRight(all[len(all)-1], ".,;:!?)]}")
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is what was kept, from a whole UTF-8 character on.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(b)
}
