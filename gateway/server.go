package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/tracectx"
	"codehydra/mcp"
	"codehydra/workspace"
)

// State is where a server is in its life.
type State string

// The states of a server, as the Settings window shows them.
const (
	StateStopped  State = "stopped"
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateFailed   State = "failed"
	// StateDisabled is a server switched off in the settings ("enabled":
	// false): configured, but neither started nor offered.
	StateDisabled State = "disabled"
)

// ServerStatus is how one server is doing.
type ServerStatus struct {
	Name  string
	State State
	// LastError is why the last start failed or the last instance ended
	// ("" when none did); it never holds an env value.
	LastError string
	// Tools is how many tools the server offers (as last listed).
	Tools int
	// Calls counts the calls forwarded to it since CodeHydra started.
	Calls int64
	// Restarts counts its instances' unexpected ends.
	Restarts int
	// Instances is how many of its instances run (one per workspace for
	// a workspace-scoped server).
	Instances int
	// ChangedTools counts its tools withheld because their definitions
	// changed since they were pinned (see ToolChanges).
	ChangedTools int
}

// server is one configured server and its instances.
type server struct {
	g    *Gateway
	name string
	cfg  settings.MCPServer

	calls atomic.Int64

	mu        sync.Mutex
	instances map[string]*instance // by workspace; "" is a shared server's
	list      []*sdk.Tool          // as last listed; nil until then
	// changed are the listed tools whose definitions differ from their
	// pins, by name; withheld until accepted.
	changed map[string]ToolChange
	// cat is what it offers besides tools, as last listed.
	cat       catalog
	lastErr   error
	restarts  int
	stopped   bool
	probing   chan struct{} // closed when the running probe ends
	probeInst *instance     // the running probe's instance, for stop

	// asksMu guards asks on its own: a question comes in while a call
	// holds no other lock.
	asksMu sync.Mutex
	// asks are the calls under way, by session (see elicit.go).
	asks map[*sdk.ClientSession][]*pendingCall

	// urlsMu guards urls on its own: redact runs under an instance's
	// lock, which status takes under mu.
	urlsMu sync.Mutex
	urls   map[string]bool // a remote server's URL as expanded, for redact
}

func newServer(g *Gateway, name string, cfg settings.MCPServer) *server {
	return &server{g: g, name: name, cfg: cfg, instances: map[string]*instance{}}
}

// instance returns the instance for workspace ws, made if needed; nil once
// the server is stopped.
func (s *server) instance(ws string) *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	i := s.instances[ws]
	if i == nil {
		i = &instance{s: s, ws: ws, supervised: true}
		s.instances[ws] = i
	}
	return i
}

// workDir is where the server's instances start: the gateway's empty
// folder for a workspace-scoped one, "" (CodeHydra's own, or none for a
// remote one) otherwise.
func (s *server) workDir() string {
	if s.cfg.PerWorkspace() && !s.cfg.Remote() {
		return s.g.workDir
	}
	return ""
}

// tools returns the server's tools, starting it (a workspace-scoped one:
// its probe) if its tools are not known yet; none when it is switched
// off, and none from a shared server that does not run (it failed, or
// ended and waits for its restart). A workspace-scoped server's tools, as
// its probe learned them, stay while one workspace's instance is down: a
// call from that workspace gets the reason and starts it again. A tool
// its tools rules hide is marked Hidden with the rule.
func (s *server) tools(ctx context.Context) []mcp.GatewayTool {
	if !s.cfg.On() {
		return nil
	}
	if s.cfg.PerWorkspace() {
		s.probe(ctx)
	} else if i := s.instance(""); i == nil {
		return nil
	} else if _, err := i.session(ctx); err != nil {
		// Not running (it failed, or ended and waits to restart): its
		// tools leave the list until it runs again; the status says why.
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]mcp.GatewayTool, 0, len(s.list))
	for _, t := range s.list {
		c := *t
		c.Name = s.name + "__" + t.Name
		out = append(out, mcp.GatewayTool{Tool: &c, Server: s.name, Confine: s.cfg.Confine, PerWorkspace: s.cfg.PerWorkspace(), WorkDir: s.workDir(),
			Hidden: s.withholdsLocked(t.Name), PathsAllow: s.cfg.Paths.Allow, PathsDeny: s.cfg.Paths.Deny, PerMinute: s.cfg.RateLimit.PerMinute})
	}
	return out
}

// refuses is the one place that decides whether the workspace at wsPath
// (or the user, "") may reach the server and, when tool is not "", call
// its tool named tool: forbidden, with the sentence that says why, when
// the server is switched off, its tools rules hide the tool, the tool's
// definition changed since it was pinned, or the workspace does not see
// the server; nil when allowed. The checks are the cheap ones, in that
// order; confinement, paths and rate limits are the MCP server's (see
// mcp.callGateway).
func (s *server) refuses(wsPath, tool string) error {
	why := ""
	switch {
	case !s.cfg.On():
		why = fmt.Sprintf("the MCP server %s is switched off (\"enabled\": false in its settings)", s.name)
	case tool != "":
		s.mu.Lock()
		why = s.withholdsLocked(tool)
		s.mu.Unlock()
	}
	if why == "" {
		why = s.g.Off(wsPath)[s.name]
	}
	if why != "" {
		return workspace.Errorf(workspace.CodeForbidden, "%s", why)
	}
	return nil
}

// withholdsLocked says, as a sentence, why the server's tool named tool is
// not offered: its tools rules hide it, or its definition changed since
// it was pinned; "" when neither. s.mu is held.
func (s *server) withholdsLocked(tool string) string {
	if why := s.hides(tool); why != "" {
		return why
	}
	return s.withheldLocked(tool)
}

// hides says, as a sentence, why the server's tools rules hide its tool
// named tool; "" when they do not.
func (s *server) hides(tool string) string {
	rule := s.cfg.Tools.Hides(tool)
	if rule == "" {
		return ""
	}
	return fmt.Sprintf("tool %s of server %s is hidden by its %s (settings: mcpServers.%s.tools); only the user can change that, in the settings file", tool, s.name, rule, s.name)
}

// withheldLocked says, as a sentence, why the tool named tool is
// withheld because its definition changed since it was pinned; "" when it
// is not. s.mu is held.
func (s *server) withheldLocked(tool string) string {
	if _, ok := s.changed[tool]; !ok {
		return ""
	}
	return fmt.Sprintf("tool %s of server %s is withheld: its definition changed since it was pinned (definition changed; review it in Settings > MCP servers, where Accept offers it again)", tool, s.name)
}

// probe learns a workspace-scoped server's tools before any workspace
// called it, from an instance started in an empty private folder (its
// only root) and stopped once it has listed them. Concurrent callers
// share one probe.
func (s *server) probe(ctx context.Context) {
	s.mu.Lock()
	if s.list != nil || s.stopped {
		s.mu.Unlock()
		return
	}
	ch := s.probing
	if ch == nil {
		ch = make(chan struct{})
		s.probing = ch
		go s.runProbe(ch)
	}
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (s *server) runProbe(done chan struct{}) {
	defer func() {
		s.mu.Lock()
		s.probing = nil
		s.mu.Unlock()
		close(done)
	}()
	dir, err := os.MkdirTemp("", "codehydra-mcp-probe-")
	if err != nil {
		s.setErr(fmt.Errorf("%s: make a folder to learn its tools in: %w", s.name, err))
		return
	}
	defer os.RemoveAll(dir)
	i := &instance{s: s, ws: dir, probe: true}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.probeInst = i
	s.mu.Unlock()
	defer func() {
		i.stop()
		s.mu.Lock()
		s.probeInst = nil
		s.mu.Unlock()
	}()
	_, _ = i.session(context.Background())
}

// setTools records the tools an instance listed, checks them against
// their pins (pinning those never seen), and tells the listeners when
// they changed, or when back says that they come back (a shared server
// runs again after it failed or ended).
func (s *server) setTools(tools []*sdk.Tool, back bool) {
	var withheld map[string]ToolChange
	if s.g.pins != nil {
		withheld = s.g.pins.check(s.name, tools)
	}
	s.mu.Lock()
	changed := back || s.list == nil || !slices.EqualFunc(s.list, tools, sameTool)
	s.list, s.changed = tools, withheld
	s.mu.Unlock()
	if changed {
		s.g.toolsChanged()
	}
}

func sameTool(a, b *sdk.Tool) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func (s *server) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
	s.g.opts.Log.Warn("MCP server failed", slog.String("server", s.name), slog.Any("err", err))
}

func (s *server) crashed(err error) {
	s.mu.Lock()
	s.restarts++
	s.lastErr = err
	s.mu.Unlock()
	s.g.opts.Log.Warn("MCP server ended; restarting it", slog.String("server", s.name), slog.Any("err", err))
}

// call forwards one call to the instance for wsPath, unless refuses
// forbids it.
func (s *server) call(ctx context.Context, wsPath, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	if err := s.refuses(wsPath, tool); err != nil {
		return nil, err
	}
	i, sess, err := s.reach(ctx, wsPath, "call")
	if err != nil {
		return nil, err
	}
	s.calls.Add(1)
	defer s.calling(sess, mcp.AskerOf(ctx))()
	var arguments any
	if len(args) > 0 {
		arguments = args
	}
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Meta: tracectx.Inject(ctx, nil), Name: tool, Arguments: arguments})
	err = s.redact(err)
	switch {
	case err == nil:
		namespaceContent(s.name, res.Content...)
		return res, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: no answer to %s in time (the call was cancelled): %w", s.name, tool, ctx.Err())
	case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || i.ended(sess):
		return nil, fmt.Errorf("%s: the server ended during the call to %s; it is restarted: %w", s.name, tool, err)
	}
	return nil, fmt.Errorf("%s: call %s: %w", s.name, tool, err)
}

// reach is the session of the instance for wsPath (the shared one, for a
// shared server), started if needed; a workspace-scoped server refuses
// the user ("" wsPath), whom verb ("call", "ask") says what they did.
func (s *server) reach(ctx context.Context, wsPath, verb string) (*instance, *sdk.ClientSession, error) {
	ws := ""
	if s.cfg.PerWorkspace() {
		if wsPath == "" {
			return nil, nil, fmt.Errorf("%s runs one instance per workspace: %s it from a workspace", s.name, verb)
		}
		ws = wsPath
	}
	i := s.instance(ws)
	if i == nil {
		return nil, nil, fmt.Errorf("%s: %w", s.name, errClosed)
	}
	sess, err := i.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	return i, sess, nil
}

// stop stops every instance of the server for good.
func (s *server) stop() {
	s.mu.Lock()
	s.stopped = true
	insts := slices.Collect(maps.Values(s.instances))
	if s.probeInst != nil {
		insts = append(insts, s.probeInst)
	}
	s.instances = map[string]*instance{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, i := range insts {
		wg.Go(i.stop)
	}
	wg.Wait()
}

// workspaces are the workspaces that have an instance of the server.
func (s *server) workspaces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.instances))
}

// forget stops the instance of workspace ws, if any, and waits for it to
// end; a later call from ws starts a new one.
func (s *server) forget(ws string) {
	s.mu.Lock()
	i := s.instances[ws]
	delete(s.instances, ws)
	s.mu.Unlock()
	if i != nil {
		i.stop()
	}
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.name, State: StateStopped, Tools: len(s.list), Calls: s.calls.Load(), Restarts: s.restarts, ChangedTools: len(s.changed)}
	if !s.cfg.On() {
		st.State = StateDisabled
		return st
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	starting := s.probing != nil
	for _, i := range s.instances {
		run, start := i.state()
		if run {
			st.Instances++
		}
		starting = starting || start
	}
	switch {
	case st.Instances > 0:
		st.State = StateRunning
	case starting:
		st.State = StateStarting
	case s.lastErr != nil:
		st.State = StateFailed
	}
	return st
}
