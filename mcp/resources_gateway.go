package mcp

// The gateway servers' resources, resource templates and prompts (issue
// 24, point 7). They are registered with the SDK server like the gateway's
// tools, so that resources/list, resources/templates/list and prompts/list
// page them and list_changed reaches the sessions (those whose list
// changed: see tell), each namespaced: a resource's URI and a template as
// GatewayResourceURI, a prompt as "<server>__<prompt>". A resources/read
// of a namespaced URI (listed or not, expanded from a template or not)
// and a prompts/get of a gateway prompt never reach the SDK's handlers:
// forwardGateway takes them through the policies that apply (the
// workspace's choice of servers, a workspace-scoped server's need of a
// workspace, confinement of a path or file: URI, the server's rate limit;
// the caller's rate limit is limitMethod's) to the caller's instance.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
	"codehydra/wsfs"
)

// feat is one registered resource, template or prompt: its server and
// its definition's JSON.
type feat struct {
	server, sig string
}

// subKey is an instance's resource: the workspace of a workspace-scoped
// server's instance ("" for a shared one) and the namespaced URI.
type subKey struct {
	ws, uri string
}

// syncCatalogs registers the servers' resources, templates and prompts
// that are new or changed and removes those gone; the SDK then sends
// their list_changed. When nothing changed for everyone, one item of
// each kind is registered again as it is, for the sessions whose
// workspace's choice of servers changed (see refresh).
func (g *gatewayTools) syncCatalogs(cats []GatewayCatalog) {
	res, tpls, prompts := map[string]*sdk.Resource{}, map[string]*sdk.ResourceTemplate{}, map[string]*sdk.Prompt{}
	next := map[listKind]map[string]feat{kindResources: {}, kindPrompts: {}}
	byServer := map[string]GatewayCatalog{}
	sig := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range cats {
		byServer[c.Server] = c
		for _, r := range c.Resources {
			if r != nil && res[r.URI] == nil {
				res[r.URI] = r
				next[kindResources]["r "+r.URI] = feat{c.Server, sig(r)}
			}
		}
		for _, t := range c.Templates {
			if t != nil && tpls[t.URITemplate] == nil {
				tpls[t.URITemplate] = t
				next[kindResources]["t "+t.URITemplate] = feat{c.Server, sig(t)}
			}
		}
		for _, p := range c.Prompts {
			if p != nil && strings.HasPrefix(p.Name, c.Server+"__") && prompts[p.Name] == nil {
				prompts[p.Name] = p
				next[kindPrompts][p.Name] = feat{c.Server, sig(p)}
			}
		}
	}
	g.mu.Lock()
	old := g.feats
	g.feats, g.cats = next, byServer
	g.mu.Unlock()

	var goneRes, goneTpls, gonePrompts []string
	for key := range old[kindResources] {
		if _, ok := next[kindResources][key]; !ok {
			if uri, ok := strings.CutPrefix(key, "r "); ok {
				goneRes = append(goneRes, uri)
			} else {
				goneTpls = append(goneTpls, strings.TrimPrefix(key, "t "))
			}
		}
	}
	for name := range old[kindPrompts] {
		if _, ok := next[kindPrompts][name]; !ok {
			gonePrompts = append(gonePrompts, name)
		}
	}
	if len(goneRes) > 0 {
		g.s.mcp.RemoveResources(goneRes...)
	}
	if len(goneTpls) > 0 {
		g.s.mcp.RemoveResourceTemplates(goneTpls...)
	}
	if len(gonePrompts) > 0 {
		g.s.mcp.RemovePrompts(gonePrompts...)
	}
	changedRes := len(goneRes)+len(goneTpls) > 0
	for uri, r := range res {
		if old[kindResources]["r "+uri] != next[kindResources]["r "+uri] {
			changedRes = g.add("resource", uri, func() { g.s.mcp.AddResource(r, g.refuseResource) }) || changedRes
		}
	}
	for tpl, t := range tpls {
		if old[kindResources]["t "+tpl] != next[kindResources]["t "+tpl] {
			changedRes = g.add("resource template", tpl, func() { g.s.mcp.AddResourceTemplate(t, g.refuseResource) }) || changedRes
		}
	}
	changedPrompts := len(gonePrompts) > 0
	for name, p := range prompts {
		if old[kindPrompts][name] != next[kindPrompts][name] {
			changedPrompts = g.add("prompt", name, func() { g.s.mcp.AddPrompt(p, g.refusePrompt) }) || changedPrompts
		}
	}
	if !changedRes && len(res) > 0 {
		r := res[slices.Min(slices.Collect(maps.Keys(res)))]
		g.add("resource", r.URI, func() { g.s.mcp.AddResource(r, g.refuseResource) })
	} else if !changedRes && len(tpls) > 0 {
		t := tpls[slices.Min(slices.Collect(maps.Keys(tpls)))]
		g.add("resource template", t.URITemplate, func() { g.s.mcp.AddResourceTemplate(t, g.refuseResource) })
	}
	if !changedPrompts && len(prompts) > 0 {
		p := prompts[slices.Min(slices.Collect(maps.Keys(prompts)))]
		g.add("prompt", p.Name, func() { g.s.mcp.AddPrompt(p, g.refusePrompt) })
	}
}

// add runs one registration; the SDK panics on a URI or template it
// refuses, and a foreign server's resource must not take CodeHydra down,
// so such a one is left out (logged). It reports whether it registered.
func (g *gatewayTools) add(what, key string, register func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			g.s.log.Warn("gateway "+what+" left out", slog.String("key", key), slog.Any("error", r))
		}
	}()
	register()
	return true
}

// refuseResource and refusePrompt are the handlers the SDK is given; a
// read or get of a gateway item takes forwardGateway instead, so they are
// reached only with its question for a client asked in results
// (askedInResult), which the SDK then marks input_required.
func (g *gatewayTools) refuseResource(ctx context.Context, _ *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if q, ok := ctx.Value(askedKey{}).(*sdk.ReadResourceResult); ok {
		return q, nil
	}
	return nil, errors.New("a gateway resource is read through the gateway")
}

func (g *gatewayTools) refusePrompt(ctx context.Context, _ *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	if q, ok := ctx.Value(askedKey{}).(*sdk.GetPromptResult); ok {
		return q, nil
	}
	return nil, errors.New("a gateway prompt is got through the gateway")
}

// catalog is the registered catalog of server.
func (g *gatewayTools) catalog(server string) (GatewayCatalog, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.cats[server]
	return c, ok
}

// filterList takes out of a resources/list, resources/templates/list or
// prompts/list answer for ss (whose token's workspace is ws) the items of
// the servers ws does not see, and records what ss was shown (nil: a
// stateless request, nothing to record).
func (g *gatewayTools) filterList(ss *sdk.ServerSession, ws string, res sdk.Result) {
	if g == nil {
		return
	}
	off := g.off(ws)
	hidden := func(uri string) bool {
		server, _, ok := ParseGatewayResourceURI(uri)
		_, no := off[server]
		return ok && no
	}
	switch r := res.(type) {
	case *sdk.ListResourcesResult:
		r.Resources = slices.DeleteFunc(r.Resources, func(x *sdk.Resource) bool { return hidden(x.URI) })
		g.saw(ss, ws, kindResources)
	case *sdk.ListResourceTemplatesResult:
		r.ResourceTemplates = slices.DeleteFunc(r.ResourceTemplates, func(x *sdk.ResourceTemplate) bool { return hidden(x.URITemplate) })
		g.saw(ss, ws, kindResources)
	case *sdk.ListPromptsResult:
		r.Prompts = slices.DeleteFunc(r.Prompts, func(x *sdk.Prompt) bool {
			server, _, _ := strings.Cut(x.Name, "__")
			_, no := off[server]
			return no && g.isPrompt(x.Name)
		})
		g.saw(ss, ws, kindPrompts)
	}
}

// isPrompt says whether name is a gateway prompt as registered.
func (g *gatewayTools) isPrompt(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.feats[kindPrompts][name]
	return ok
}

// gatewayRequest says which gateway server req (a resources/read or
// prompts/get, a resources/subscribe or unsubscribe) is for; ok is false
// for one of CodeHydra's own, which the SDK answers.
func (g *gatewayTools) gatewayRequest(req sdk.Request) (server string, ok bool) {
	if g == nil {
		return "", false
	}
	switch r := req.(type) {
	case *sdk.ReadResourceRequest:
		if r.Params != nil {
			server, _, ok = ParseGatewayResourceURI(r.Params.URI)
		}
	case *sdk.SubscribeRequest:
		if r.Params != nil {
			server, _, ok = ParseGatewayResourceURI(r.Params.URI)
		}
	case *sdk.UnsubscribeRequest:
		if r.Params != nil {
			server, _, ok = ParseGatewayResourceURI(r.Params.URI)
		}
	case *sdk.GetPromptRequest:
		if r.Params != nil && g.isPrompt(r.Params.Name) {
			server, _, ok = strings.Cut(r.Params.Name, "__")
		}
	}
	return server, ok
}

// forwardGateway is the path of a resources/read, prompts/get,
// resources/subscribe or resources/unsubscribe for server: the caller's
// workspace, the checks that apply, the server's rate limit, then the
// gateway under the call timeout; one audit line. Its failures are
// JSON-RPC errors, as the protocol has them for these methods.
func (s *Server) forwardGateway(ctx context.Context, method, server string, req sdk.Request) (sdk.Result, error) {
	start := s.now()
	who := callerOf(req)
	rec := auditEntry{Caller: who.name(), Tool: method, Server: server, Outcome: "ok"}
	defer s.recordCall(&rec, start)
	var ws workspace.Workspace
	var err error
	if !who.isUser() {
		var h map[string][]string
		if extra := req.GetExtra(); extra != nil {
			h = extra.Header
		}
		ws, err = s.workspaceOf(who, h)
		rec.Workspace = ws.Path
	}
	cat, known := s.gw.catalog(server)
	policy := cat.Policy
	policy.Server = server
	callCtx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if why := s.gw.off(ws.Path)[server]; err == nil && why != "" {
		err = workspace.Errorf(workspace.CodeForbidden, "%s: %s", method, why)
	}
	// What a confined server is given to open: the URI read, or the
	// prompt's arguments.
	var args any
	switch r := req.(type) {
	case *sdk.ReadResourceRequest:
		_, inner, _ := ParseGatewayResourceURI(r.Params.URI)
		args = map[string]string{"uri": inner}
	case *sdk.GetPromptRequest:
		args = r.Params.Arguments
	}
	if err == nil && known && args != nil {
		data, _ := json.Marshal(args)
		err = admitGateway(callCtx, method, policy, ws.Path, wsfs.DenyPatterns(s.opts.WorkspaceDeny), data)
	}
	if err == nil && !s.serverLimits.allow(server, policy.PerMinute) {
		err = workspace.Errorf(workspace.CodeRateLimited,
			"too many calls of the MCP server %q from all its callers (its rateLimit: %d per minute, %s included); wait a moment and retry", server, policy.PerMinute, method)
	}
	var res sdk.Result
	if err == nil {
		res, err = s.readOrGet(callCtx, method, server, who, ws.Path, req)
		switch r := req.(type) {
		case *sdk.SubscribeRequest:
			err = s.gw.subscribe(callCtx, r.Session, ws.Path, policy, r.Params.URI, true)
		case *sdk.UnsubscribeRequest:
			err = s.gw.subscribe(callCtx, r.Session, ws.Path, policy, r.Params.URI, false)
		}
	}
	if err != nil {
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = workspace.Errorf(workspace.CodeTimeout, "%s: the MCP server %q did not answer within %s; retry later, or raise toolTimeoutSeconds in the settings", method, server, s.opts.CallTimeout)
		}
		return nil, s.rpcError(&rec, err)
	}
	return res, nil
}

// readOrGet reads a resource or gets a prompt (req) through the gateway,
// for who (whose workspace is ws); a question of the server on the way
// goes where one during a tool call goes. Other requests: nil.
func (s *Server) readOrGet(ctx context.Context, method, server string, who caller, ws string, req sdk.Request) (sdk.Result, error) {
	gw := s.opts.Gateway
	ss, _ := req.GetSession().(*sdk.ServerSession)
	rt := roundTrip{who: who, session: ss, server: server, ws: ws}
	var run heldRun
	switch r := req.(type) {
	case *sdk.ReadResourceRequest:
		rt.caps, rt.name, rt.state, rt.responses = r.ClientCapabilities(), method+" "+r.Params.URI, r.Params.RequestState, r.Params.InputResponses
		rt.question = func(q sdk.InputRequestMap, state string) sdk.Result {
			return askedInResult{&sdk.ReadResourceResult{InputRequests: q, RequestState: state}}
		}
		run = func(ctx context.Context, ask Asker) (sdk.Result, error) {
			return asResult(gw.ReadResource(context.WithValue(ctx, askerKey{}, ask), ws, r.Params.URI))
		}
	case *sdk.GetPromptRequest:
		rt.caps, rt.name, rt.state, rt.responses = r.ClientCapabilities(), method+" "+r.Params.Name, r.Params.RequestState, r.Params.InputResponses
		rt.args, _ = json.Marshal(r.Params.Arguments)
		rt.question = func(q sdk.InputRequestMap, state string) sdk.Result {
			return askedInResult{&sdk.GetPromptResult{InputRequests: q, RequestState: state}}
		}
		run = func(ctx context.Context, ask Asker) (sdk.Result, error) {
			return asResult(gw.GetPrompt(context.WithValue(ctx, askerKey{}, ask), ws, r.Params.Name, r.Params.Arguments))
		}
	default:
		return nil, nil
	}
	if rt.asksInResults() {
		return s.callAskingInResults(ctx, rt, run)
	}
	return run(ctx, s.asker(ctx, ss, server, ws))
}

// rpcError is the JSON-RPC error of a forwarded request's failure: the
// server's own code when it gave one (e.g. resource not found), else one
// that fits CodeHydra's code, with the code named in the message.
func (s *Server) rpcError(rec *auditEntry, err error) error {
	code := workspace.CodeOf(err)
	var re *jsonrpc.Error
	var we *workspace.Error
	switch {
	case errors.As(err, &we):
	case errors.As(err, &re):
		rec.Outcome = outcomeToolError
		return &jsonrpc.Error{Code: re.Code, Message: err.Error(), Data: re.Data}
	}
	rec.Outcome = string(code)
	rpc := int64(jsonrpc.CodeInternalError)
	switch code {
	case workspace.CodeRateLimited:
		rpc = codeServerBusy
	case workspace.CodeForbidden, workspace.CodeInvalidInput:
		rpc = jsonrpc.CodeInvalidParams
	case workspace.CodeInternal:
		s.log.Warn("gateway request failed", slog.String("caller", rec.Caller), slog.String("method", rec.Tool), slog.String("server", rec.Server), slog.Any("error", err))
	}
	return &jsonrpc.Error{Code: rpc, Message: string(code) + ": " + err.Error()}
}

// subscribe passes ss's subscription to uri on (or off) to the instance
// for ws: each subscribe is passed on (a server that restarted has
// forgotten the earlier ones; servers take a subscription twice as
// once), and the instance is unsubscribed when its last subscribed
// session leaves.
func (g *gatewayTools) subscribe(ctx context.Context, ss *sdk.ServerSession, ws string, policy GatewayTool, uri string, on bool) error {
	key := subKey{uri: uri}
	if policy.PerWorkspace {
		key.ws = ws
	}
	g.mu.Lock()
	set := g.subs[key]
	_, had := set[ss]
	if on {
		if set == nil {
			set = map[*sdk.ServerSession]bool{}
			g.subs[key] = set
		}
		set[ss] = true
	} else {
		delete(set, ss)
	}
	last := len(set) == 0
	g.mu.Unlock()
	if !on && (!had || !last) {
		return nil
	}
	err := g.s.opts.Gateway.Subscribe(ctx, ws, uri, on)
	if err != nil && on && !had {
		g.mu.Lock()
		delete(g.subs[key], ss)
		g.mu.Unlock()
	}
	return err
}

// listenGateway runs each resource a subscriptions/listen (the
// stateless era's way to subscribe) names through the path of a
// resources/subscribe: the caller's bucket, then forwardGateway (the
// workspace, the servers switched off or hidden for it, the server's
// rateLimit, the upstream subscription, an audit line). The SDK
// subscribes the listen's resources itself, past this middleware, so
// this is their only check. One refused resource refuses the whole
// listen with the error a resources/subscribe of it gets, as the SDK
// does with one its SubscribeHandler refuses: dropping it instead would
// leave the client waiting for updates that never come. end ends the
// upstream subscriptions when the listen ends.
func (s *Server) listenGateway(ctx context.Context, req *sdk.SubscriptionsListenRequest) (end func(), err error) {
	type listened struct {
		sub *sdk.SubscribeRequest
		ws  string
	}
	var subs []listened
	end = func() {
		for _, l := range subs {
			s.endListened(l.sub, l.ws)
		}
	}
	if s.gw == nil || req.Params == nil || req.Params.Notifications == nil {
		return end, nil
	}
	for _, uri := range req.Params.Notifications.ResourceSubscriptions {
		sub := &sdk.SubscribeRequest{Session: req.Session, Extra: req.Extra, Params: &sdk.SubscribeParams{URI: uri, Meta: req.Params.Meta}}
		server, ok := s.gw.gatewayRequest(sub)
		if !ok {
			continue // the SubscribeHandler refuses it: gatewayOnly
		}
		if err = s.limitMethod("resources/subscribe", sub); err == nil {
			_, err = s.forwardGateway(ctx, "resources/subscribe", server, sub)
		}
		if err != nil {
			end()
			return nil, err
		}
		// forwardGateway resolved it, so it resolves now.
		var ws workspace.Workspace
		if who := callerOf(sub); !who.isUser() {
			ws, _ = s.workspaceOf(who, requestHeader(sub))
		}
		subs = append(subs, listened{sub, ws.Path})
	}
	return end, nil
}

// endListened ends the upstream subscription of a resource a
// subscriptions/listen subscribed for the workspace ws (listenGateway)
// as its listen ends, whatever the limits, the off list and the
// workspace's fate say by then (a refusal would leave it subscribed for
// no one), and writes its audit line.
func (s *Server) endListened(sub *sdk.SubscribeRequest, ws string) {
	start := s.now()
	server, _, _ := ParseGatewayResourceURI(sub.Params.URI)
	rec := auditEntry{Caller: callerOf(sub).name(), Tool: "resources/unsubscribe", Server: server, Workspace: ws, Outcome: "ok"}
	defer s.recordCall(&rec, start)
	cat, _ := s.gw.catalog(server)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CallTimeout)
	defer cancel()
	if err := s.gw.subscribe(ctx, sub.Session, rec.Workspace, cat.Policy, sub.Params.URI, false); err != nil {
		rec.Outcome = string(workspace.CodeOf(err))
	}
}

// updated passes a server's notifications/resources/updated on to the
// sessions subscribed to uri.
func (g *gatewayTools) updated(uri string) {
	_ = g.s.mcp.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri})
}

// gatewayOnly refuses a subscription to a resource that is not a gateway
// server's: CodeHydra has none of its own.
func gatewayOnly(uri string) error {
	if _, _, ok := ParseGatewayResourceURI(uri); ok {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no resource " + uri + ": only the gateway's servers' resources (" + GatewayURIPrefix + "…) take subscriptions"}
}
