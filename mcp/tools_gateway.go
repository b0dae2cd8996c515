package mcp

// The gateway's tools (Options.Gateway): the user's own MCP servers,
// offered to every caller as "<server>__<tool>". The tool list follows the
// gateway in the background, so that tools/list never waits for a slow
// server; each call passes through callTool like CodeHydra's own tools
// (token, rate limit, timeout, audit), then callGateway checks what only a
// gateway tool needs (a workspace for a per-workspace server, confinement)
// before the gateway sees it.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
	"codehydra/wsfs"
)

// gatewayListWait bounds how long the first tools/list waits for the
// gateway's first list, so that a client that lists once at start (and
// ignores tools/list_changed) sees the servers that answer quickly, while
// a slow one never stalls it.
const gatewayListWait = 2 * time.Second

// outcomeToolError is the audit outcome of a gateway tool's own failure (a
// result with isError from its server), as opposed to CodeHydra's codes.
const outcomeToolError = "tool-error"

// gatewayTools keeps the SDK server's tool list in step with the gateway.
// A nil *gatewayTools (no gateway) offers nothing.
type gatewayTools struct {
	s *Server
	// dirty holds one token while a refresh is wanted.
	dirty chan struct{}
	// listed is closed once the first refresh ended.
	listed     chan struct{}
	listedOnce sync.Once

	mu    sync.Mutex
	tools map[string]GatewayTool // by offered name
	sigs  map[string]string      // the JSON of each registered tool
	// views are, per session, its workspace and the gateway tools,
	// resources and prompts it was last shown (see view), so that a
	// list_changed reaches only the sessions whose list changed.
	views map[*sdk.ServerSession]sessionView
	// feats are the servers' resources (and templates) and prompts as
	// registered, by kind and URI (or name): see resources_gateway.go.
	feats map[listKind]map[string]feat
	// cats are the servers' catalogs, by server.
	cats map[string]GatewayCatalog
	// subs count the sessions subscribed to a resource, by instance
	// and URI (see subscribe).
	subs map[subKey]map[*sdk.ServerSession]bool
}

// sessionView is what one session was last shown of the gateway's lists.
type sessionView struct {
	ws   string              // its token's workspace; "" for the user's
	seen map[listKind]string // view(ws, kind) when it last listed or was told
}

func newGatewayTools(s *Server) *gatewayTools {
	if s.opts.Gateway == nil {
		return nil
	}
	g := &gatewayTools{s: s, dirty: make(chan struct{}, 1), listed: make(chan struct{}), views: map[*sdk.ServerSession]sessionView{},
		feats: map[listKind]map[string]feat{}, cats: map[string]GatewayCatalog{}, subs: map[subKey]map[*sdk.ServerSession]bool{}}
	g.changed() // the first list, as soon as Serve runs
	s.opts.Gateway.OnToolsChanged(g.changed)
	s.opts.Gateway.OnResourceUpdated(g.updated)
	return g
}

// changed asks for a refresh; it never blocks, and changes that come
// while one is pending are taken by it.
func (g *gatewayTools) changed() {
	select {
	case g.dirty <- struct{}{}:
	default:
	}
}

// start runs the refreshes until ctx is done or the returned stop is
// called; stop returns once the last refresh has ended.
func (g *gatewayTools) start(ctx context.Context) (stop func()) {
	if g == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-g.dirty:
				g.refresh(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// awaitFirst waits, at most gatewayListWait, for the first list.
func (g *gatewayTools) awaitFirst(ctx context.Context) {
	if g == nil {
		return
	}
	t := time.NewTimer(gatewayListWait)
	defer t.Stop()
	select {
	case <-g.listed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// lookup is the gateway tool offered under name.
func (g *gatewayTools) lookup(name string) (GatewayTool, bool) {
	if g == nil {
		return GatewayTool{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.tools[name]
	return t, ok
}

// refresh asks the gateway for its tools, within the call timeout (it may
// start servers), and registers what changed: the SDK then sends
// notifications/tools/list_changed to every session.
func (g *gatewayTools) refresh(ctx context.Context) {
	defer g.listedOnce.Do(func() { close(g.listed) })
	lctx, cancel := context.WithTimeout(ctx, g.s.opts.CallTimeout)
	list := g.s.opts.Gateway.Tools(lctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	next, sigs, offered := g.offer(list)

	g.mu.Lock()
	old := g.sigs
	var gone []string
	for name := range old {
		if _, ok := sigs[name]; !ok {
			gone = append(gone, name)
		}
	}
	// Calls see the new list before clients are told of it.
	g.tools, g.sigs = next, sigs
	g.mu.Unlock()

	if len(gone) > 0 {
		g.s.mcp.RemoveTools(gone...)
	}
	registered := len(gone) > 0
	for name, t := range offered {
		if old[name] != sigs[name] {
			g.register(t)
			registered = true
		}
	}
	if !registered && len(offered) > 0 {
		// Nothing changed for everyone, but the servers a workspace sees
		// may have: registering a tool again as it is makes the SDK send
		// tools/list_changed, which tell passes to the sessions whose list
		// changed only (the SDK has no notification for one session).
		g.register(offered[slices.Min(slices.Collect(maps.Keys(offered)))])
	}
	g.syncCatalogs(g.s.opts.Gateway.Catalogs())
	g.prune()
}

// off is the servers the workspace ws does not see, with why.
func (g *gatewayTools) off(ws string) map[string]string {
	if g == nil || ws == "" {
		return nil
	}
	return g.s.opts.Gateway.Off(ws)
}

// listKind is one of the lists a session is shown, named by its
// list_changed notification's method.
type listKind string

const (
	kindTools     listKind = "notifications/tools/list_changed"
	kindResources listKind = "notifications/resources/list_changed"
	kindPrompts   listKind = "notifications/prompts/list_changed"
)

// view sums up what the workspace ws sees of the gateway's list kind:
// names and definitions, without those of the servers it does not see.
func (g *gatewayTools) view(ws string, kind listKind) string {
	off := g.off(ws)
	g.mu.Lock()
	defer g.mu.Unlock()
	h := sha256.New()
	if kind == kindTools {
		for _, name := range slices.Sorted(maps.Keys(g.sigs)) {
			if _, no := off[g.tools[name].Server]; !no {
				fmt.Fprintf(h, "%s\x00%s\x00", name, g.sigs[name])
			}
		}
		return string(h.Sum(nil))
	}
	feats := g.feats[kind]
	for _, key := range slices.Sorted(maps.Keys(feats)) {
		if _, no := off[feats[key].server]; !no {
			fmt.Fprintf(h, "%s\x00%s\x00", key, feats[key].sig)
		}
	}
	return string(h.Sum(nil))
}

// shown filters the answer of a tools/list for ss, whose token's
// workspace is ws: the tools of servers ws does not see leave it. It
// records what ss was shown (nil: a stateless request, nothing to record).
func (g *gatewayTools) shown(ss *sdk.ServerSession, ws string, res *sdk.ListToolsResult) {
	if g == nil {
		return
	}
	if off := g.off(ws); len(off) > 0 && res != nil {
		res.Tools = slices.DeleteFunc(res.Tools, func(t *sdk.Tool) bool {
			gt, ok := g.lookup(t.Name)
			_, no := off[gt.Server]
			return ok && no
		})
	}
	g.saw(ss, ws, kindTools)
}

// saw records that ss, whose workspace is ws, was shown the list kind.
func (g *gatewayTools) saw(ss *sdk.ServerSession, ws string, kind listKind) {
	if ss == nil {
		return
	}
	seen := g.view(ws, kind)
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.views[ss]
	if !ok || v.ws != ws {
		v = sessionView{ws: ws, seen: map[listKind]string{}}
	}
	v.seen[kind] = seen
	g.views[ss] = v
}

// tell decides whether ss gets the list_changed of kind: a session that
// never listed it does; another only when what its workspace sees
// changed since it was last shown or told.
func (g *gatewayTools) tell(ss *sdk.ServerSession, kind listKind) bool {
	g.mu.Lock()
	v, ok := g.views[ss]
	old, listed := v.seen[kind]
	g.mu.Unlock()
	if !ok || !listed {
		return true
	}
	seen := g.view(v.ws, kind)
	if seen == old {
		return false
	}
	g.mu.Lock()
	v.seen[kind] = seen
	g.mu.Unlock()
	return true
}

// prune forgets the views and subscriptions of sessions that ended (a
// server stays subscribed: it is told nothing, and its updates reach no
// one).
func (g *gatewayTools) prune() {
	live := map[*sdk.ServerSession]bool{}
	for ss := range g.s.mcp.Sessions() {
		live[ss] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	maps.DeleteFunc(g.views, func(ss *sdk.ServerSession, _ sessionView) bool { return !live[ss] })
	for key, set := range g.subs {
		maps.DeleteFunc(set, func(ss *sdk.ServerSession, _ bool) bool { return !live[ss] })
		if len(set) == 0 {
			delete(g.subs, key)
		}
	}
}

// notifyMiddleware drops a list_changed for a session whose list did not
// change (see tell).
func (g *gatewayTools) notifyMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		kind := listKind(method)
		switch kind {
		case kindTools, kindResources, kindPrompts:
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && !g.tell(ss, kind) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// offer checks the gateway's tools and makes the tools to register; a
// tool the gateway withholds (GatewayTool.Hidden) is kept in next,
// for its call to be refused, but not offered. Each name must hold "__"
// and be CodeHydra's own tool's never, each input
// schema must be an object, and an output schema admits the error shape
// too, since clients check structuredContent against it even when isError
// is set (see addTool).
func (g *gatewayTools) offer(list []GatewayTool) (next map[string]GatewayTool, sigs map[string]string, offered map[string]*sdk.Tool) {
	next, sigs, offered = map[string]GatewayTool{}, map[string]string{}, map[string]*sdk.Tool{}
	for _, gt := range list {
		if gt.Hidden != "" && gt.Tool != nil {
			// Kept for the call's forbidden, never registered.
			if _, own := g.s.tools[gt.Tool.Name]; !own && next[gt.Tool.Name].Tool == nil {
				next[gt.Tool.Name] = gt
			}
			continue
		}
		t, err := g.offerOne(gt, next)
		if err != nil {
			g.s.log.Warn("gateway tool left out", slog.String("server", gt.Server), slog.Any("error", err))
			continue
		}
		sig, err := json.Marshal(struct {
			T            *sdk.Tool
			Confine, Per bool
		}{t, gt.Confine, gt.PerWorkspace})
		if err != nil {
			g.s.log.Warn("gateway tool left out", slog.String("server", gt.Server), slog.String("tool", t.Name), slog.Any("error", err))
			continue
		}
		next[t.Name], sigs[t.Name], offered[t.Name] = gt, string(sig), t
	}
	return next, sigs, offered
}

func (g *gatewayTools) offerOne(gt GatewayTool, taken map[string]GatewayTool) (*sdk.Tool, error) {
	if gt.Tool == nil {
		return nil, errors.New("the gateway gave a tool without a definition")
	}
	t := *gt.Tool
	_, own := g.s.tools[t.Name]
	switch {
	case own || !strings.Contains(t.Name, "__"):
		return nil, fmt.Errorf("tool %q is not named <server>__<tool>, or is one of CodeHydra's own", t.Name)
	case taken[t.Name].Tool != nil:
		return nil, fmt.Errorf("tool %q is offered twice", t.Name)
	}
	if t.InputSchema == nil {
		t.InputSchema = map[string]any{"type": "object"}
	}
	var in struct {
		Type any `json:"type"`
	}
	if data, err := json.Marshal(t.InputSchema); err != nil || json.Unmarshal(data, &in) != nil || in.Type != "object" {
		return nil, fmt.Errorf("tool %q: its input schema is not an object schema", t.Name)
	}
	if t.OutputSchema != nil {
		t.OutputSchema = map[string]any{"type": "object", "anyOf": []any{t.OutputSchema, errorSchema()}}
	}
	return &t, nil
}

// register adds t with a handler that forwards to the gateway. The SDK
// panics on a definition it refuses; a foreign server's tool must not take
// CodeHydra down, so such a tool is left out.
func (g *gatewayTools) register(t *sdk.Tool) {
	defer func() {
		if r := recover(); r != nil {
			g.mu.Lock()
			delete(g.tools, t.Name)
			delete(g.sigs, t.Name)
			g.mu.Unlock()
			g.s.log.Warn("gateway tool left out", slog.String("tool", t.Name), slog.Any("error", r))
		}
	}()
	name := t.Name
	g.s.mcp.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		gt, _ := g.lookup(name)
		ws := callerWorkspace(ctx).Path
		call := func(ctx context.Context, ask Asker) (sdk.Result, error) {
			return asResult(g.s.opts.Gateway.Call(context.WithValue(ctx, askerKey{}, ask), ws, name, req.Params.Arguments))
		}
		rt := roundTrip{who: callerFrom(ctx), session: req.Session, caps: req.ClientCapabilities(), name: name, args: req.Params.Arguments,
			state: req.Params.RequestState, responses: req.Params.InputResponses, server: gt.Server, ws: ws,
			question: func(q sdk.InputRequestMap, state string) sdk.Result {
				return &sdk.CallToolResult{InputRequests: q, RequestState: state}
			}}
		var r sdk.Result
		var err error
		if rt.asksInResults() {
			r, err = g.s.callAskingInResults(ctx, rt, call)
		} else {
			r, err = call(ctx, g.s.asker(ctx, req.Session, gt.Server, ws))
		}
		res, _ := r.(*sdk.CallToolResult)
		if err == nil && res == nil {
			err = errors.New("the gateway answered nothing")
		}
		if err != nil {
			res = &sdk.CallToolResult{}
			res.SetError(fail(err))
		}
		return res, nil
	})
}

// callGateway is callTool's path for a gateway tool: the workspace of the
// call (a workspace's token: its own; the user's: none), the caller's rate
// limit, the checks of admitGateway, the server's own rate limit, then the
// gateway under the call timeout. A
// tool's own failure goes back as its server made it; CodeHydra's and the
// gateway's failures are docs/DESIGN.md's error results.
func (s *Server) callGateway(ctx context.Context, rec *auditEntry, who caller, gt GatewayTool, req *sdk.CallToolRequest, next func(context.Context) (sdk.Result, error)) (sdk.Result, error) {
	rec.Server = gt.Server
	var ws workspace.Workspace
	var err error
	if !who.isUser() {
		ws, err = s.workspaceOf(who, requestHeader(req))
		rec.Workspace = ws.Path
	}
	if !s.limiter.allow(limitKey(who, "", rec.Tool)) {
		err = workspace.Errorf(workspace.CodeRateLimited, "%s", s.rateLimitMessage(rec.Tool))
	}
	// The checks run within the call's timeout: a confined call's check
	// costs a system call per path part.
	callCtx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if why := s.gw.off(ws.Path)[gt.Server]; err == nil && why != "" {
		err = workspace.Errorf(workspace.CodeForbidden, "%s: %s", rec.Tool, why)
	}
	if err == nil {
		err = admitGateway(callCtx, rec.Tool, gt, ws.Path, wsfs.DenyPatterns(s.opts.WorkspaceDeny), req.Params.Arguments)
		if err != nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = workspace.Errorf(workspace.CodeTimeout,
				"%s: checking its arguments' paths against your workspace took longer than %s; nothing was sent to %q: split the call", rec.Tool, s.opts.CallTimeout, gt.Server)
		}
	}
	// The server's own limit counts only the calls that would reach it.
	if err == nil && !s.serverLimits.allow(gt.Server, gt.PerMinute) {
		err = workspace.Errorf(workspace.CodeRateLimited,
			"too many calls of the MCP server %q from all its callers (its rateLimit: %d per minute, %s included); wait a moment and retry", gt.Server, gt.PerMinute, rec.Tool)
	}
	if err != nil {
		return s.failed(rec, err), nil
	}

	res, err := next(withCall(callCtx, who, ws))
	if err != nil {
		// The SDK's only refusal here: the tool left the list meanwhile.
		rec.Outcome = string(workspace.CodeInvalidInput)
		return res, err
	}
	r, ok := res.(*sdk.CallToolResult)
	switch {
	case !ok:
		return res, nil
	case r.GetError() != nil:
		return s.failed(rec, s.gatewayError(ctx, callCtx, rec.Tool, gt.Server, r.GetError())), nil
	case r.IsError:
		rec.Outcome = outcomeToolError
	}
	return r, nil
}

// admitGateway refuses, before the gateway sees it, a call of a tool the
// gateway withholds (its server's tools rules hide it, or its definition
// changed since it was pinned), a call that a per-workspace server cannot
// take without a workspace, and a call of a
// confined server with an argument path outside the caller's workspace
// or refused by deny (see confineArgs).
func admitGateway(ctx context.Context, tool string, gt GatewayTool, wsPath string, deny []string, args json.RawMessage) error {
	switch {
	case gt.Hidden != "":
		return workspace.Errorf(workspace.CodeForbidden, "%s: %s", tool, gt.Hidden)
	case gt.PerWorkspace && wsPath == "":
		return workspace.Errorf(workspace.CodeInvalidInput,
			"%s belongs to %q, a server that runs one instance per workspace, in it; the user's token names no workspace: call it with a workspace's token (its agent's, or a client set up with `codehydra mcp-config --workspace PATH`)", tool, gt.Server)
	case gt.Confine && wsPath == "":
		return workspace.Errorf(workspace.CodeForbidden,
			"%s belongs to %q, which is confined to the caller's workspace, and the user's token names none: call it with a workspace's token (`codehydra mcp-config --workspace PATH`)", tool, gt.Server)
	case gt.Confine:
		return confineArgs(ctx, tool, gt, wsPath, deny, args)
	}
	return nil
}

// gatewayError is the error result of the gateway's own failure: a
// timeout when the call's deadline (or a held call's) passed (not the client's), the
// gateway's code when it gave one, else internal-error naming the server.
func (s *Server) gatewayError(ctx, callCtx context.Context, tool, server string, err error) error {
	var ae *actionError
	if errors.As(err, &ae) {
		err = ae.err
	}
	var we *workspace.Error
	switch {
	// err's deadline may be a held call's (its first request's), past
	// while this retry waited.
	case (errors.Is(callCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil:
		return workspace.Errorf(workspace.CodeTimeout,
			"%s: the MCP server %q did not answer within %s; retry later, or raise toolTimeoutSeconds in the settings", tool, server, s.opts.CallTimeout)
	case errors.As(err, &we):
		return we
	}
	return workspace.Errorf(workspace.CodeInternal,
		"%s: the MCP server %q is unavailable (%v); CodeHydra restarts a server that stopped, so retry in a moment, and see its state and last error in Settings > MCP servers", tool, server, err)
}
