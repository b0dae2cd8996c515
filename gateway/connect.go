package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/proc"
	"codehydra/internal/settings"
	"codehydra/mcp"
)

// MarkerEnv names the variable that marks every process of one stdio
// server (its value is random per instance), as CODEHYDRA_AGENT_ID marks
// an agent's, so that reaping can tell its processes from strangers'.
const MarkerEnv = "CODEHYDRA_MCP_SERVER_ID"

// connect starts the server for workspace ws ("" for a shared one),
// initializes a client session with it and lists its tools. cleanup ends
// what is left of its processes once the session is closed.
func (s *server) connect(ctx context.Context, ws string, probe bool) (sess *sdk.ClientSession, cleanup func(), tools []*sdk.Tool, err error) {
	var asked chan struct{}
	client := sdk.NewClient(&sdk.Implementation{Name: "codehydra", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
			go s.refreshTools(req.Session)
		},
		ResourceListChangedHandler: func(_ context.Context, req *sdk.ResourceListChangedRequest) {
			go s.refreshCatalog(req.Session)
		},
		PromptListChangedHandler: func(_ context.Context, req *sdk.PromptListChangedRequest) {
			go s.refreshCatalog(req.Session)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			s.g.resourceUpdated(mcp.GatewayResourceURI(s.name, req.Params.URI))
		},
		// Declares the elicitation capability (form questions).
		ElicitationHandler: s.elicit,
	})
	client.AddReceivingMiddleware(refuseSampling(s.name, s.g.opts.Log))
	client.AddSendingMiddleware(refuseRoundTripSampling(s.name, s.g.opts.Log))
	if ws != "" && s.cfg.PerWorkspace() {
		// Roots are deprecated from protocol 2026-07-28 on, but the
		// servers in use (server-filesystem) still take their allowed
		// folders from them, and the issue asks for the workspace as root.
		//lint:ignore SA1019 see above
		client.AddRoots(&sdk.Root{URI: fileURI(ws), Name: filepath.Base(ws)}) //lint:ignore SA1019 see above
		client.AddReceivingMiddleware(rootsAnswered(&asked))
	}
	var transport sdk.Transport
	var stderr *tail
	cleanup = func() {}
	if err := s.cfg.ConfineProblem(); err != nil {
		return nil, nil, nil, err
	}
	if s.cfg.Remote() {
		transport, err = s.httpTransport(ctx, ws, probe)
	} else {
		var o proc.Options
		o, err = s.command(ctx, ws, probe)
		if err == nil {
			stderr = &tail{}
			o.Stderr = stderr
			st := &stdioTransport{g: s.g, opts: o, server: s.name, ws: ws, marker: markerOf(o.Env)}
			transport, cleanup = st, st.cleanup
		}
	}
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err = client.Connect(ctx, transport, nil)
	if err == nil {
		tools, err = listTools(ctx, sess)
		if err != nil {
			_ = sess.Close()
		}
	}
	if err == nil && asked != nil {
		awaitRoots(ctx, asked)
	}
	if err != nil {
		cleanup()
		if last := stderr.lastLine(); last != "" {
			err = fmt.Errorf("%w (its last error output: %s)", err, last)
		}
		return nil, nil, nil, s.redact(fmt.Errorf("start: %w", err))
	}
	return sess, cleanup, tools, nil
}

// rootsWait bounds how long a new workspace instance is given to ask for
// its roots; rootsSettle is how long it is then given to take them in.
// A server that takes its allowed folders from the roots (server-
// filesystem) asks right after initialization and answers calls that come
// before it has them as if it had no folder at all.
const (
	rootsWait   = 2 * time.Second
	rootsSettle = 100 * time.Millisecond
)

// rootsAnswered makes *asked a channel closed once the server's first
// roots/list request has been answered.
func rootsAnswered(asked *chan struct{}) sdk.Middleware {
	ch := make(chan struct{})
	*asked = ch
	var once sync.Once
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "roots/list" {
				once.Do(func() { close(ch) })
			}
			return res, err
		}
	}
}

// awaitRoots waits (boundedly) until the server asked for its roots and
// had a moment to take them in, so that the first call sees the
// workspace; a server that never asks costs rootsWait once per start.
func awaitRoots(ctx context.Context, asked <-chan struct{}) {
	t := time.NewTimer(rootsWait)
	defer t.Stop()
	select {
	case <-asked:
		time.Sleep(rootsSettle)
	case <-t.C:
	case <-ctx.Done():
	}
}

// command is how to start the stdio server for workspace ws ("" for a
// shared one), with its {env:NAME} values (and a workspace-scoped one's
// workspace variables) filled in. The instance of a workspace runs in that
// workspace's sandbox (Options.Confine), a probe in one of its empty
// folder (Options.ConfineProbe); both start in the gateway's empty
// working folder (Gateway.WorkDir), a shared one where CodeHydra runs.
func (s *server) command(ctx context.Context, ws string, probe bool) (proc.Options, error) {
	prog := s.cfg.Command
	if !filepath.IsAbs(prog) {
		p, err := exec.LookPath(prog)
		if err != nil {
			return proc.Options{}, fmt.Errorf("command not found: %s (install it, or give its absolute path)", prog)
		}
		prog = p
	} else if _, err := os.Stat(prog); err != nil {
		return proc.Options{}, fmt.Errorf("command not found: %s", prog)
	}
	vars, err := s.workspaceVars(ctx, ws, probe)
	if err != nil {
		return proc.Options{}, err
	}
	args := make([]string, len(s.cfg.Args))
	for k, a := range s.cfg.Args {
		v, err := settings.Expand(a, s.g.opts.LookupEnv, vars)
		if err != nil {
			return proc.Options{}, fmt.Errorf("args: %w", err)
		}
		args[k] = v
	}
	env := os.Environ()
	if !s.cfg.PerWorkspace() && s.g.opts.SharedCaches != "" {
		env = append(env, sharedCacheEnv(s.g.opts.SharedCaches)...)
	}
	for k, v := range s.cfg.Env {
		v, err := settings.Expand(v, s.g.opts.LookupEnv, vars)
		if err != nil {
			return proc.Options{}, fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	marker := MarkerEnv + "=" + rand.Text()
	o := proc.Options{Path: prog, Args: args, Env: append(env, marker), Marker: marker}
	if ws != "" && s.cfg.PerWorkspace() {
		// Not in the workspace: npx, uvx and the like would run a copy of
		// the server that the repository ships (node_modules/.bin), and a
		// relative path would reach what the workspace holds past the
		// checks. The workspace is its root, and {workspace} in args.
		if s.g.workDir == "" {
			return proc.Options{}, fmt.Errorf("the empty folder that workspace-scoped servers start in could not be made (fix this, then restart CodeHydra): %w", s.g.workDirErr)
		}
		o.Dir = s.g.workDir
		confine := s.g.opts.Confine
		if probe {
			confine = s.g.opts.ConfineProbe
		}
		plan, err := confine(ctx, ws)
		if err != nil {
			return proc.Options{}, err
		}
		o.Sandbox = plan.Policy
		o.Env = append(o.Env, plan.Env...)
	}
	return o, nil
}

// workspaceVars are the workspace variables of the instance for ws: nil
// for a shared server, the probe's empty folder as its workspace and
// project (no branch) for a probe, else what Options.Workspace says.
func (s *server) workspaceVars(ctx context.Context, ws string, probe bool) (*settings.WorkspaceVars, error) {
	switch {
	case ws == "" || !s.cfg.PerWorkspace():
		return nil, nil
	case probe:
		return &settings.WorkspaceVars{Path: ws, Name: filepath.Base(ws), ProjectPath: ws}, nil
	}
	v, err := s.g.opts.Workspace(ctx, ws)
	if err != nil {
		return nil, fmt.Errorf("learn the workspace's name, branch and project for its variables: %w", err)
	}
	v.Path = ws
	return &v, nil
}

// redact hides the {env:NAME} values of a remote server's URL in err: the
// HTTP client's errors (*url.Error) quote the URL it was given, and these
// errors reach the log, the Settings window and the agents. The URL is
// shown as configured instead; errors.Is and As still see err. A
// workspace-scoped server's URL is expanded once per workspace: each form
// it was given is hidden.
func (s *server) redact(err error) error {
	if err == nil || !s.cfg.Remote() {
		return err
	}
	u, xerr := settings.ExpandEnv(s.cfg.URL, s.g.opts.LookupEnv)
	if xerr != nil {
		return err
	}
	msg := err.Error()
	for _, u := range append(s.expandedURLs(), u) {
		if u == s.cfg.URL {
			continue
		}
		for _, form := range []string{u, strings.Trim(strconv.Quote(u), `"`)} {
			msg = strings.ReplaceAll(msg, form, s.cfg.URL)
		}
	}
	if msg == err.Error() {
		return err
	}
	return redactedError{msg: msg, err: err}
}

// redactedError is err with msg as its text.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// refreshTools lists sess's tools again after the server said they
// changed.
func (s *server) refreshTools(sess *sdk.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), s.g.opts.StartTimeout)
	defer cancel()
	tools, err := listTools(ctx, sess)
	if err != nil {
		s.setErr(fmt.Errorf("%s: list its changed tools: %w", s.name, s.redact(err)))
		return
	}
	s.setTools(tools, false)
}

func listTools(ctx context.Context, sess *sdk.ClientSession) ([]*sdk.Tool, error) {
	tools := []*sdk.Tool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// fileURI is the file:// URI of the absolute path p.
func fileURI(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// tail keeps the end of a server's error output, for the error of a
// failed start.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

// lastLine is the last non-blank line written, at most 300 bytes.
func (t *tail) lastLine() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	last := strings.TrimSpace(string(lines[len(lines)-1]))
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}

// sharedCacheEnv points the package runners' and build tools' caches of a
// shared server at folders of dir, CodeHydra's own (see
// Options.SharedCaches). A server's own env in the settings still wins.
func sharedCacheEnv(dir string) []string {
	return []string{
		"npm_config_cache=" + filepath.Join(dir, "npm"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"UV_CACHE_DIR=" + filepath.Join(dir, "uv"),
		"GOMODCACHE=" + filepath.Join(dir, "go-mod"),
		"GOCACHE=" + filepath.Join(dir, "go-build"),
		"BUN_INSTALL_CACHE_DIR=" + filepath.Join(dir, "bun"),
	}
}
