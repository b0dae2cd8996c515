// Package gateway starts, supervises and talks to the user's own MCP
// servers (settings mcpServers) as an MCP client, so that CodeHydra's one
// MCP server can offer their tools to every agent as "<server>__<tool>".
// It implements mcp.Gateway: the mcp package decides who may call what,
// and this package only starts servers and forwards calls.
//
// A shared server has one instance; a workspace-scoped one has one per
// workspace, with it as its MCP root and {workspace} in its args, started
// in the gateway's empty folder (WorkDir), not in the workspace. Instances start on
// first use (or at launch when marked), restart with backoff after they
// end on their own, and stop on Close. A workspace-scoped server's tools
// must be listed before any workspace calls it: the gateway learns them
// from a probe instance started in an empty private folder (given as its
// only root), which it stops at once, and afterwards from any instance
// that starts.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/paths"
	"codehydra/internal/reap"
	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/workspace"
)

// Options configure a Gateway. Zero values pick the defaults.
type Options struct {
	// Servers are the servers as configured (settings mcpServers).
	Servers map[string]settings.MCPServer
	// LookupEnv fills {env:NAME} in the servers' values; os.LookupEnv by
	// default.
	LookupEnv func(string) (string, bool)
	// Workspace gives the workspace variables ({workspace.name},
	// {workspace.branch}, {project.path}) of the workspace at path, for
	// the instance of a workspace-scoped server that starts for it; its
	// error keeps the instance from starting. By default the name is the
	// folder's, and the branch and project are empty.
	Workspace func(ctx context.Context, path string) (settings.WorkspaceVars, error)
	// Choice names the servers that the workspace at path does not see
	// (its project's settings leave them out, or the user switched them
	// off for it in the tray), each with the sentence that says so and
	// how to turn it on. Its answer is kept until Rechoose; an error
	// hides every server from the workspace (and is asked again next
	// time). Nil: every workspace sees every server.
	Choice func(ctx context.Context, path string) (map[string]string, error)
	// StartTimeout bounds one start of one instance (spawn, initialize,
	// list tools); 30 s by default.
	StartTimeout time.Duration
	// Backoff is the wait before the restart after the n-th (from 1)
	// unexpected end of an instance, or before a failed start is tried
	// again; 1 s doubling up to 30 s by default.
	Backoff func(n int) time.Duration
	// StopTimeout is how long a stopped stdio server has to exit after
	// its stdin closes, before SIGTERM and then SIGKILL; 2 s by default.
	StopTimeout time.Duration
	// Log gets the gateway's events; never arguments or env values.
	Log *slog.Logger
	// Confine plans how the instance of a workspace-scoped server is
	// confined: in its workspace's sandbox. Its error keeps the instance
	// from starting. Nil confines nothing.
	Confine func(ctx context.Context, path string) (sandbox.Plan, error)
	// ConfineProbe plans how the probe that learns a workspace-scoped
	// server's tools is confined: to dir, the empty folder it runs in.
	// Nil confines nothing.
	ConfineProbe func(ctx context.Context, dir string) (sandbox.Plan, error)
	// SharedCaches is a private folder (no agent reaches it) that holds
	// the caches of the shared servers, which run outside any sandbox:
	// npx, uvx or go run would otherwise take the code they run from the
	// user's caches (~/.npm/_npx, ~/.cache/uv, ~/go/pkg/mod), which every
	// agent may write. "" leaves their caches where they are.
	SharedCaches string
	// RecordsDir holds a record of each running stdio server process, and
	// New reaps those a crashed earlier run left behind;
	// paths.MCPServersDir() by default.
	RecordsDir string
	// WorkDirs is the private folder (made 0700) that holds the empty
	// folder workspace-scoped servers start in (see WorkDir);
	// paths.MCPWorkDirs() by default.
	WorkDirs string
	// PinsFile holds the pinned definitions of the servers' tools (see
	// pins.go); paths.MCPPinsFile() by default.
	PinsFile string
	// Unpinned turns pinning off (settings "pinTools": false): every
	// tool is offered as its server defines it now, and nothing is
	// recorded.
	Unpinned bool
}

func (o Options) withDefaults() Options {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Workspace == nil {
		o.Workspace = func(_ context.Context, path string) (settings.WorkspaceVars, error) {
			return settings.WorkspaceVars{Path: path, Name: filepath.Base(path)}, nil
		}
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.Backoff == nil {
		o.Backoff = func(n int) time.Duration {
			return min(time.Second<<min(n-1, 5), 30*time.Second)
		}
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Confine == nil {
		o.Confine = func(context.Context, string) (sandbox.Plan, error) { return sandbox.Plan{}, nil }
	}
	if o.ConfineProbe == nil {
		o.ConfineProbe = func(context.Context, string) (sandbox.Plan, error) { return sandbox.Plan{}, nil }
	}
	if o.RecordsDir == "" {
		o.RecordsDir = paths.MCPServersDir()
	}
	if o.WorkDirs == "" {
		o.WorkDirs = paths.MCPWorkDirs()
	}
	if o.PinsFile == "" {
		o.PinsFile = paths.MCPPinsFile()
	}
	return o
}

// Gateway is the user's MCP servers behind one mcp.Gateway. Make one with
// New; Close stops every server.
type Gateway struct {
	opts Options
	sp   *reap.Spawner
	// reaped is closed once the orphans of a crashed earlier run are
	// reaped.
	reaped chan struct{}

	// workDir is the empty, read-only folder that workspace-scoped
	// servers start in (see WorkDir); workDirErr says why it is "".
	workDir    string
	workDirErr error
	// pins are the tools' pinned definitions; nil when Unpinned.
	pins *pins

	mu        sync.Mutex
	servers   map[string]*server
	listeners []func()
	// updated are OnResourceUpdated's listeners.
	updated []func(uri string)
	closed  bool
	// choices are Options.Choice's answers, by workspace.
	choices map[string]map[string]string
}

var _ mcp.Gateway = (*Gateway)(nil)

// New returns a gateway for opts.Servers. Nothing starts until Start, a
// call of Tools or Call. In the background it reaps the processes of
// stdio servers that a crashed earlier run left behind (see reapOrphans).
func New(opts Options) *Gateway {
	g := &Gateway{opts: opts.withDefaults(), sp: reap.NewSpawner(errGatewayClosed), reaped: make(chan struct{}),
		servers: map[string]*server{}, choices: map[string]map[string]string{}}
	g.workDir, g.workDirErr = emptyFolder(g.opts.WorkDirs)
	if g.workDirErr != nil {
		g.opts.Log.Warn("no workspace-scoped MCP server can start", "err", g.workDirErr)
	}
	if !g.opts.Unpinned {
		g.pins = loadPins(g.opts.PinsFile, g.opts.Log)
	}
	for name, cfg := range opts.Servers {
		g.servers[name] = newServer(g, name, cfg.Clone())
	}
	go func() {
		defer close(g.reaped)
		g.reapOrphans()
	}()
	return g
}

// Start starts, in the background, the servers marked startAtLaunch (a
// workspace-scoped one: its probe, to learn its tools) and switched on.
func (g *Gateway) Start() {
	for _, s := range g.snapshot() {
		if s.cfg.StartAtLaunch && s.cfg.On() {
			go s.tools(context.Background())
		}
	}
}

// snapshot returns the servers, sorted by name.
func (g *Gateway) snapshot() []*server {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.SortedFunc(maps.Values(g.servers), func(a, b *server) int { return strings.Compare(a.name, b.name) })
}

// Tools lists every server's tools, starting within ctx the servers that
// have not run yet, all at once: a slow or broken server delays no other
// beyond ctx and contributes no tools (its status says why).
func (g *Gateway) Tools(ctx context.Context) []mcp.GatewayTool {
	servers := g.snapshot()
	lists := make([][]mcp.GatewayTool, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { lists[i] = s.tools(ctx) })
	}
	wg.Wait()
	return slices.Concat(lists...)
}

// Call calls tool ("<server>__<tool>") with args on the instance for the
// caller's workspace wsPath. An error names the server and says why.
func (g *Gateway) Call(ctx context.Context, wsPath, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	name, inner, ok := strings.Cut(tool, "__")
	if !ok || inner == "" {
		return nil, fmt.Errorf("%q is not a gateway tool: its name must be <server>__<tool>", tool)
	}
	g.mu.Lock()
	s := g.servers[name]
	g.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("no MCP server %q is configured (tool %s)", name, tool)
	}
	return s.call(ctx, wsPath, inner, args)
}

// Off names the servers the workspace at wsPath does not see, with why
// (see Options.Choice); none for "" (a call with no workspace).
func (g *Gateway) Off(wsPath string) map[string]string {
	if wsPath == "" || g.opts.Choice == nil {
		return nil
	}
	g.mu.Lock()
	off, ok := g.choices[wsPath]
	g.mu.Unlock()
	if ok {
		return off
	}
	ctx, cancel := context.WithTimeout(context.Background(), choiceTimeout)
	defer cancel()
	off, err := g.opts.Choice(ctx, wsPath)
	if err != nil {
		why := fmt.Sprintf("which MCP servers this workspace sees could not be read (%v); retry in a moment", err)
		off = map[string]string{}
		for _, s := range g.snapshot() {
			off[s.name] = why
		}
		return off
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.choices != nil {
		g.choices[wsPath] = off
	}
	return off
}

// choiceTimeout bounds one read of a workspace's choice of servers.
const choiceTimeout = 5 * time.Second

// Rechoose forgets what Options.Choice said for the workspace at wsPath
// ("": every workspace), after the user changed which servers it sees,
// stops its instances of the servers it no longer sees, and tells the
// listeners.
func (g *Gateway) Rechoose(wsPath string) {
	g.mu.Lock()
	if wsPath == "" {
		clear(g.choices)
	} else {
		delete(g.choices, wsPath)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range g.snapshot() {
		if !s.cfg.PerWorkspace() {
			continue
		}
		for _, ws := range s.workspaces() {
			if wsPath != "" && ws != wsPath {
				continue
			}
			if _, off := g.Off(ws)[s.name]; off {
				wg.Go(func() { s.forget(ws) })
			}
		}
	}
	wg.Wait()
	g.toolsChanged()
}

// OnToolsChanged registers fn, called on its own goroutine whenever the
// tools may have changed.
func (g *Gateway) OnToolsChanged(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listeners = append(g.listeners, fn)
}

func (g *Gateway) toolsChanged() {
	g.mu.Lock()
	fns := slices.Clone(g.listeners)
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return
	}
	for _, fn := range fns {
		go fn()
	}
}

// ToolChanges are the tools of server whose definitions changed since
// they were pinned, sorted by tool: each is withheld until accepted.
func (g *Gateway) ToolChanges(server string) []ToolChange {
	g.mu.Lock()
	s := g.servers[server]
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.SortedFunc(maps.Values(s.changed), func(a, b ToolChange) int { return strings.Compare(a.Tool, b.Tool) })
}

// AcceptToolChange pins the new definition of server's tool, the one
// whose hash is hash (ToolChange.Hash, as shown to the user), and offers
// the tool again. A definition that changed again since is not accepted:
// the user reviews the new one.
func (g *Gateway) AcceptToolChange(server, tool, hash string) error {
	g.mu.Lock()
	s := g.servers[server]
	g.mu.Unlock()
	if s == nil || g.pins == nil {
		return fmt.Errorf("tool %s of server %s has no changed definition to accept", tool, server)
	}
	s.mu.Lock()
	c, ok := s.changed[tool]
	switch {
	case !ok:
		s.mu.Unlock()
		return fmt.Errorf("tool %s of server %s has no changed definition to accept (it was accepted already, or changed back)", tool, server)
	case c.Hash != hash || c.New == nil:
		s.mu.Unlock()
		return workspace.Errorf(workspace.CodeConflict, "the definition of tool %s of server %s changed again since it was shown; review it anew", tool, server)
	}
	g.pins.accept(c)
	delete(s.changed, tool)
	s.mu.Unlock()
	g.opts.Log.Info("accepted a changed MCP tool definition", slog.String("server", server), slog.String("tool", tool), slog.String("hash", hash))
	g.toolsChanged()
	return nil
}

// Statuses says how each server is doing, sorted by name, for the
// Settings window.
func (g *Gateway) Statuses() []ServerStatus {
	var out []ServerStatus
	for _, s := range g.snapshot() {
		out = append(out, s.status())
	}
	return out
}

// Reconfigure applies new settings: servers removed or changed are
// stopped (a changed one starts again, with its new settings, on next
// use), new ones are added, unchanged ones keep running. A server
// switched off ("enabled": false) stays listed, disabled, and offers no
// tools.
func (g *Gateway) Reconfigure(servers map[string]settings.MCPServer) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	var stop, start []*server
	for name, s := range g.servers {
		if cfg, ok := servers[name]; !ok || !cfg.Equal(s.cfg) {
			stop = append(stop, s)
			delete(g.servers, name)
		}
	}
	for name, cfg := range servers {
		if _, ok := g.servers[name]; !ok {
			s := newServer(g, name, cfg.Clone())
			g.servers[name] = s
			start = append(start, s)
		}
	}
	g.mu.Unlock()
	for _, s := range stop {
		s.stop()
	}
	for _, s := range start {
		if s.cfg.StartAtLaunch && s.cfg.On() {
			go s.tools(context.Background())
		}
	}
	if len(stop)+len(start) > 0 {
		g.toolsChanged()
	}
}

// ForgetWorkspace stops the instances that run for the workspace at path
// (it was deleted) and returns once their processes are gone. A later
// call from a workspace at the same path starts new ones.
func (g *Gateway) ForgetWorkspace(path string) {
	var wg sync.WaitGroup
	for _, s := range g.snapshot() {
		if s.cfg.PerWorkspace() {
			wg.Go(func() { s.forget(path) })
		}
	}
	wg.Wait()
}

// Close stops every server and waits for them to end.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	servers := slices.Collect(maps.Values(g.servers))
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.stop)
	}
	wg.Wait()
	g.sp.Close()
	<-g.reaped
	if g.workDir != "" {
		_ = os.Chmod(g.workDir, 0o700)
		_ = os.Remove(g.workDir)
	}
	return nil
}

// WorkDir is the folder every workspace-scoped server starts in: empty,
// CodeHydra's and read-only (made at New, removed at Close), outside any
// workspace, so that nothing an agent writes is found from there and a
// relative path names nothing but what climbs out of it. "" when it could
// not be made: no workspace-scoped server starts then.
func (g *Gateway) WorkDir() string { return g.workDir }

// emptyFolder makes the gateway's working folder in parent, a folder of
// CodeHydra's own (made 0700), its symlinks resolved (so that a relative
// path is judged from where it really is). npm (npx) and uv take the
// nearest folder above where they start that holds a node_modules, a
// package.json or a uv.toml as their project, so no one else may write a
// folder above it: not the system's temporary folder, where any local
// user can make /tmp/node_modules (see privateAbove).
func emptyFolder(parent string) (string, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("make %s: %w", parent, err)
	}
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", parent, err)
	}
	if runtime.GOOS != "windows" {
		_ = os.Chmod(real, 0o700) // tightened if found looser; privateAbove checks
	}
	if err := privateAbove(real); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(real, "wd-")
	if err != nil {
		return "", fmt.Errorf("make a folder in %s: %w", real, err)
	}
	// Windows ignores the mode (its read-only attribute would only keep
	// the folder from being removed at Close); the folder's ACL is the
	// data folder's, the user's own.
	if runtime.GOOS != "windows" {
		if err := os.Chmod(dir, 0o500); err != nil {
			_ = os.Remove(dir)
			return "", fmt.Errorf("make %s read-only: %w", dir, err)
		}
	}
	return dir, nil
}

// errClosed is the error of a call to a server that was stopped.
var errClosed = errors.New("the server was stopped (CodeHydra is closing, or its settings changed)")
