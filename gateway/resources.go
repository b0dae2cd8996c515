package gateway

// The servers' resources, resource templates and prompts (issue 24, point
// 7): listed when an instance starts and again when the server says they
// changed, offered namespaced (mcp.GatewayResourceURI, "<server>__<prompt>")
// and forwarded to the caller's instance like a tool call. Pinning does
// not apply to them; the tools rules neither.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/tracectx"
	"codehydra/mcp"
)

// catalog is what a server last listed of its resources, templates and
// prompts, as it defines them.
type catalog struct {
	resources []*sdk.Resource
	templates []*sdk.ResourceTemplate
	prompts   []*sdk.Prompt
	subscribe bool
}

// listCatalog lists what sess's server offers besides tools; a list that
// fails is left empty (and logged): its tools still serve.
func (s *server) listCatalog(ctx context.Context, sess *sdk.ClientSession) catalog {
	var c catalog
	caps := sess.InitializeResult().Capabilities
	if caps == nil {
		return c
	}
	var errs []error
	if caps.Resources != nil {
		c.subscribe = caps.Resources.Subscribe
		for r, err := range sess.Resources(ctx, nil) {
			if err != nil {
				errs = append(errs, fmt.Errorf("list resources: %w", err))
				break
			}
			c.resources = append(c.resources, r)
		}
		for t, err := range sess.ResourceTemplates(ctx, nil) {
			if err != nil {
				errs = append(errs, fmt.Errorf("list resource templates: %w", err))
				break
			}
			c.templates = append(c.templates, t)
		}
	}
	if caps.Prompts != nil {
		for p, err := range sess.Prompts(ctx, nil) {
			if err != nil {
				errs = append(errs, fmt.Errorf("list prompts: %w", err))
				break
			}
			c.prompts = append(c.prompts, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.g.opts.Log.Warn("MCP server's resources or prompts not listed", slog.String("server", s.name), slog.Any("err", s.redact(err)))
	}
	return c
}

// setCatalog records what an instance listed and tells the listeners
// when it changed.
func (s *server) setCatalog(c catalog) {
	s.mu.Lock()
	same := sameJSON(s.cat.resources, c.resources) && sameJSON(s.cat.templates, c.templates) &&
		sameJSON(s.cat.prompts, c.prompts) && s.cat.subscribe == c.subscribe
	s.cat = c
	s.mu.Unlock()
	if !same {
		s.g.toolsChanged()
	}
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// refreshCatalog lists sess's resources, templates and prompts again
// after the server said they changed.
func (s *server) refreshCatalog(sess *sdk.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), s.g.opts.StartTimeout)
	defer cancel()
	s.setCatalog(s.listCatalog(ctx, sess))
}

// catalog is the server's catalog as offered: none when it is switched
// off, or shared and not running.
func (s *server) catalog() mcp.GatewayCatalog {
	out := mcp.GatewayCatalog{Server: s.name, Policy: mcp.GatewayTool{Server: s.name, Confine: s.cfg.Confine, PerWorkspace: s.cfg.PerWorkspace(),
		WorkDir: s.workDir(), PathsAllow: s.cfg.Paths.Allow, PathsDeny: s.cfg.Paths.Deny, PerMinute: s.cfg.RateLimit.PerMinute}}
	if !s.cfg.On() || !s.cfg.PerWorkspace() && !s.running() {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out.Subscribe = s.cat.subscribe
	for _, r := range s.cat.resources {
		c := *r
		c.URI = mcp.GatewayResourceURI(s.name, r.URI)
		out.Resources = append(out.Resources, &c)
	}
	for _, t := range s.cat.templates {
		c := *t
		c.URITemplate = mcp.GatewayResourceURI(s.name, t.URITemplate)
		out.Templates = append(out.Templates, &c)
	}
	for _, p := range s.cat.prompts {
		c := *p
		c.Name = s.name + "__" + p.Name
		out.Prompts = append(out.Prompts, &c)
	}
	return out
}

// running says whether the shared instance has a live session.
func (s *server) running() bool {
	s.mu.Lock()
	i := s.instances[""]
	s.mu.Unlock()
	if i == nil {
		return false
	}
	run, _ := i.state()
	return run
}

// Catalogs are every server's resources, templates and prompts, sorted by
// server (see mcp.Gateway).
func (g *Gateway) Catalogs() []mcp.GatewayCatalog {
	var out []mcp.GatewayCatalog
	for _, s := range g.snapshot() {
		out = append(out, s.catalog())
	}
	return out
}

// ReadResource reads the namespaced uri on the instance for wsPath.
func (g *Gateway) ReadResource(ctx context.Context, wsPath, uri string) (*sdk.ReadResourceResult, error) {
	name, inner, ok := mcp.ParseGatewayResourceURI(uri)
	if !ok {
		return nil, fmt.Errorf("%q is not a gateway resource: its URI must be %s<server>/<the server's URI>", uri, mcp.GatewayURIPrefix)
	}
	s, sess, i, err := g.sessionFor(ctx, name, wsPath)
	if err != nil {
		return nil, err
	}
	s.calls.Add(1)
	defer s.calling(sess, mcp.AskerOf(ctx))()
	res, err := sess.ReadResource(ctx, &sdk.ReadResourceParams{Meta: tracectx.Inject(ctx, nil), URI: inner})
	if err != nil {
		return nil, s.forwardError(ctx, i, sess, "read "+inner, err)
	}
	for _, c := range res.Contents {
		if c != nil {
			c.URI = mcp.GatewayResourceURI(s.name, c.URI)
		}
	}
	return res, nil
}

// GetPrompt gets the prompt "<server>__<prompt>" on the instance for
// wsPath.
func (g *Gateway) GetPrompt(ctx context.Context, wsPath, prompt string, args map[string]string) (*sdk.GetPromptResult, error) {
	name, inner, ok := strings.Cut(prompt, "__")
	if !ok || inner == "" {
		return nil, fmt.Errorf("%q is not a gateway prompt: its name must be <server>__<prompt>", prompt)
	}
	s, sess, i, err := g.sessionFor(ctx, name, wsPath)
	if err != nil {
		return nil, err
	}
	s.calls.Add(1)
	defer s.calling(sess, mcp.AskerOf(ctx))()
	res, err := sess.GetPrompt(ctx, &sdk.GetPromptParams{Meta: tracectx.Inject(ctx, nil), Name: inner, Arguments: args})
	if err != nil {
		return nil, s.forwardError(ctx, i, sess, "get prompt "+inner, err)
	}
	for _, m := range res.Messages {
		if m != nil {
			namespaceContent(s.name, m.Content)
		}
	}
	return res, nil
}

// Subscribe subscribes (on) or unsubscribes the instance for wsPath to
// the namespaced uri.
func (g *Gateway) Subscribe(ctx context.Context, wsPath, uri string, on bool) error {
	name, inner, ok := mcp.ParseGatewayResourceURI(uri)
	if !ok {
		return fmt.Errorf("%q is not a gateway resource: its URI must be %s<server>/<the server's URI>", uri, mcp.GatewayURIPrefix)
	}
	s, sess, i, err := g.sessionFor(ctx, name, wsPath)
	if err != nil {
		return err
	}
	if on {
		err = sess.Subscribe(ctx, &sdk.SubscribeParams{URI: inner})
	} else {
		err = sess.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: inner})
	}
	if err != nil {
		return s.forwardError(ctx, i, sess, "subscribe to "+inner, err)
	}
	return nil
}

// OnResourceUpdated registers fn for the servers' resource updates.
func (g *Gateway) OnResourceUpdated(fn func(uri string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.updated = append(g.updated, fn)
}

func (g *Gateway) resourceUpdated(uri string) {
	g.mu.Lock()
	fns := slices.Clone(g.updated)
	g.mu.Unlock()
	for _, fn := range fns {
		fn(uri)
	}
}

// sessionFor is the session of server name's instance for wsPath, with
// the checks of a tool call that apply (see server.refuses and reach).
func (g *Gateway) sessionFor(ctx context.Context, name, wsPath string) (*server, *sdk.ClientSession, *instance, error) {
	g.mu.Lock()
	s := g.servers[name]
	g.mu.Unlock()
	if s == nil {
		return nil, nil, nil, fmt.Errorf("no MCP server %q is configured", name)
	}
	if err := s.refuses(wsPath, ""); err != nil {
		return nil, nil, nil, err
	}
	i, sess, err := s.reach(ctx, wsPath, "ask")
	if err != nil {
		return nil, nil, nil, err
	}
	return s, sess, i, nil
}

// forwardError says why a request forwarded to sess failed.
func (s *server) forwardError(ctx context.Context, i *instance, sess *sdk.ClientSession, what string, err error) error {
	err = s.redact(err)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: no answer to %s in time (the request was cancelled): %w", s.name, what, ctx.Err())
	case i.ended(sess):
		return fmt.Errorf("%s: the server ended during %s; it is restarted: %w", s.name, what, err)
	}
	return fmt.Errorf("%s: %s: %w", s.name, what, err)
}

// namespaceContent makes the URIs of the resources in content (links and
// embedded resources) the namespaced ones, so that a client reads them
// here.
func namespaceContent(server string, content ...sdk.Content) {
	for _, c := range content {
		switch c := c.(type) {
		case *sdk.ResourceLink:
			c.URI = mcp.GatewayResourceURI(server, c.URI)
		case *sdk.EmbeddedResource:
			if c.Resource != nil {
				c.Resource.URI = mcp.GatewayResourceURI(server, c.Resource.URI)
			}
		}
	}
}
