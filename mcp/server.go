// Package mcp is CodeHydra's app-wide MCP server: one Streamable HTTP
// endpoint on 127.0.0.1 through which every agent asks about and acts on its
// own workspace. It owns the listener, the access checks (token, Host,
// Origin, body size), per-workspace rate limits, per-call timeouts, the audit
// log and the tool handlers, which are thin adapters over the workspace
// domain. It also renders configuration snippets for MCP clients.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"codehydra/internal/sandbox"
	"codehydra/workspace"
)

// WorkspaceHeader names the workspace a request acts on.
const WorkspaceHeader = "X-Workspace-Path"

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// Options configure a Server. Zero values take the defaults named below.
type Options struct {
	// Addr is "127.0.0.1:<port>"; port 0 picks a free port. When a fixed
	// port is taken the server falls back to a free one and logs a warning.
	// Default "127.0.0.1:0". Only loopback addresses are accepted.
	Addr string
	// Bound, when set, is the listener Bind made for Addr before the
	// server was built (so that the agents' supervisor, which the server
	// needs, can be given the port first); the server owns it once New
	// succeeds (Shutdown closes it), the caller until then.
	Bound *Binding
	// Token is the master token, the user's. Every request must carry it
	// or the token of a registered workspace (WorkspaceToken), which
	// restricts the call to that workspace. Required.
	Token *Token
	// Workspaces is the domain the tools act on. Required.
	Workspaces Workspaces
	// Agents reports OpenCode ports; nil means no agents (port null).
	Agents Agents
	// Prompts takes first prompts; nil refuses workspace_create's
	// initialPrompt.
	Prompts Prompts
	// Reviews takes workspace_send_review's reviews; nil refuses them.
	Reviews Reviews
	// Sessions reads and restarts agents for the orchestration tools;
	// nil means no agents (no replies, nothing to restart).
	Sessions AgentSessions
	// Answers replies to agents' requests (workspace_answer); nil refuses.
	Answers Answers
	// RateLimit and Burst shape the token bucket of each caller's calls
	// of each JSON-RPC method or tool (the user's, per workspace named).
	// Default 20/s, burst 40.
	RateLimit rate.Limit
	Burst     int
	// CallTimeout bounds each tool call. Default 30 s.
	CallTimeout time.Duration
	// TaskTimeout bounds a workspace_run_task run instead. Default 10 min.
	TaskTimeout time.Duration
	// Confine plans how a task of the workspace at path is confined (in
	// its workspace's sandbox); its error keeps the task from running.
	// Nil confines nothing.
	Confine func(ctx context.Context, path string) (sandbox.Plan, error)
	// MaxBody bounds request bodies. Default 1 MiB.
	MaxBody int64
	// SessionIdle closes an MCP session that has received no request for
	// this long; its client has to open a new one. Default 30 min.
	SessionIdle time.Duration
	// MaxSessions caps the MCP sessions open at once: past it, a request
	// that would open one is refused with 503. Default 100.
	MaxSessions int
	// MaxSessionsPerWorkspace caps the sessions opened with one
	// workspace's token, so that one agent cannot take every place; the
	// user's (master token) sessions are bounded by MaxSessions only.
	// Default a quarter of MaxSessions, at least 1; never more than
	// MaxSessions.
	MaxSessionsPerWorkspace int
	// Subscribe, when set, gives the server the workspace domain's events
	// (workspace.Manager.Subscribe), so that it closes a workspace's MCP
	// sessions as soon as the workspace goes. Without it they end at their
	// next request or when idle.
	Subscribe func() (events <-chan workspace.Event, cancel func())
	// MaxConnections caps the connections that have shown a token, served
	// at once: past it, a request is answered 503 and its connection
	// closed. Default 256.
	MaxConnections int
	// MaxUnauthenticated caps the connections that have not shown a token
	// yet: past it, the oldest of them is closed for a new one. Default
	// DefaultMaxUnauthenticated.
	MaxUnauthenticated int
	// WorkspaceDeny are deny patterns (settings workspaceDeny) that the
	// file tools refuse on top of wsfs.DefaultDeny.
	WorkspaceDeny []string
	// PullRequests opens pull requests (workspace_create_pr); nil opens
	// none.
	PullRequests PullRequests
	// Hibernation hibernates and wakes agents (workspace_hibernate,
	// workspace_wake, and the tools that need a running agent); nil means
	// no agents.
	Hibernation Hibernation
	// Endpoints finds the ports a workspace's processes listen on
	// (workspace_list_endpoints); nil finds none.
	Endpoints Endpoints
	// Gateway offers the user's own MCP servers as tools named
	// "<server>__<tool>" (tools_gateway.go); nil offers none.
	Gateway Gateway
	// Elicitor asks the user directly what a gateway server asks during
	// a call whose client cannot ask it (elicit.go): the tray's window;
	// nil declines such questions.
	Elicitor Elicitor
	// ElicitTimeout bounds how long a gateway server's question waits for
	// its answer, which is cancel after it. Default CallTimeout.
	ElicitTimeout time.Duration
	// AuditPath is the audit.jsonl file; "" records nothing.
	AuditPath string
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Version is reported to clients as the server version. Default "dev".
	Version string
	// TracerProvider and MeterProvider receive the spans and metrics of
	// every request and tool call (telemetry.go); with both nil there are
	// none, at no cost.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Runs runs tasks in the background (workspace_run_task with
	// background, workspace_stop_task, workspace_task_output); nil
	// refuses background runs.
	Runs TaskRuns
	// ProjectRun is the run command line of a project's settings
	// (projectSetup run), the task project:run; nil or "" has none.
	ProjectRun func(projectPath string) string
}

// Server is the app-wide MCP server. Create it with New, bind with Listen,
// run with Serve and stop with Shutdown.
type Server struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	listen  func(network, addr string) (net.Listener, error)
	mcp     *sdk.Server
	http    *http.Server
	limiter *rateLimiter
	// serverLimits are the gateway servers' own rate limits.
	serverLimits *serverLimits
	ids          *identities
	gate         *connGate
	audit        *auditLog
	tools        map[string]toolDef
	gw           *gatewayTools // nil without Options.Gateway
	tel          *telemetry    // nil: telemetry off
	// held are the gateway calls waiting for their clients' answers
	// (roundtrip.go).
	held *heldCalls

	port atomic.Int32

	mu      sync.Mutex
	ln      net.Listener
	closing bool
	// wantedPort is the fixed port Listen could not bind (0: none).
	wantedPort int

	// Places taken of MaxSessions: sessions open or being opened (see
	// limitSessions).
	places sessionPlaces

	// Connections that have sent no request yet (see closeNewConns).
	connMu   sync.Mutex
	newConns map[net.Conn]struct{}

	// Hooks that run once the HTTP response of a tools/call is flushed,
	// keyed by the call ID that trackCalls puts in an internal header.
	callSeq atomic.Uint64
	hooksMu sync.Mutex
	hooks   map[string][]func()

	// Work that outlives a request (background deletes). Shutdown waits for
	// it, then cancels it.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup

	// The tasks running, one per workspace and task (workspace_run_task).
}

// New builds a server; it does not bind a port yet (see Listen).
func New(opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(opts.TracerProvider, opts.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("set up telemetry: %w", err)
	}
	opts.Workspaces = tel.traceWorkspaces(opts.Workspaces)
	audit, err := openAuditLog(opts.AuditPath)
	if err != nil {
		return nil, err
	}
	s := &Server{
		tel:    tel,
		opts:   opts,
		log:    opts.Logger,
		now:    time.Now,
		listen: net.Listen,
		audit:  audit,
		hooks:  make(map[string][]func()),
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	s.limiter = newRateLimiter(opts.RateLimit, opts.Burst, func() time.Time { return s.now() })
	s.serverLimits = newServerLimits(func() time.Time { return s.now() })
	s.ids = &identities{master: opts.Token, workspaces: opts.Workspaces, now: func() time.Time { return s.now() }}
	s.gate = newConnGate(opts.MaxConnections, opts.MaxUnauthenticated)

	// The SDK logs every session's start at Info; one CLI command makes a
	// session, so only its warnings and errors are worth the log file.
	sdkLogger := slog.New(minLevel{Handler: opts.Logger.Handler(), min: slog.LevelWarn})
	sopts := &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger,
		// Tools only: no logging capability. The list changes only with
		// the gateway's servers.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: opts.Gateway != nil}},
	}
	if opts.Gateway != nil {
		// The gateway's servers' resources and prompts, passed through
		// (resources_gateway.go); a subscription reaches the SDK (which
		// records it for ResourceUpdated) once forwardGateway passed it
		// on.
		sopts.Capabilities.Resources = &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true}
		sopts.Capabilities.Prompts = &sdk.PromptCapabilities{ListChanged: true}
		sopts.SubscribeHandler = func(_ context.Context, req *sdk.SubscribeRequest) error { return gatewayOnly(req.Params.URI) }
		sopts.UnsubscribeHandler = func(_ context.Context, req *sdk.UnsubscribeRequest) error { return gatewayOnly(req.Params.URI) }
	}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "codehydra", Title: "CodeHydra", Version: opts.Version}, sopts)
	s.tools = s.registerTools()
	s.gw = newGatewayTools(s)
	s.held = newHeldCalls(func() time.Time { return s.now() })
	s.mcp.AddReceivingMiddleware(s.toolCallMiddleware)
	if s.gw != nil {
		s.mcp.AddSendingMiddleware(s.gw.notifyMiddleware)
	}
	s.http = s.newHTTPServer(sdkLogger)
	if opts.Bound != nil {
		s.use(opts.Bound)
	}
	return s, nil
}

// withDefaults checks the required options and the address, and fills in
// the defaults of those left zero.
func (o Options) withDefaults() (Options, error) {
	if o.Token == nil {
		return o, errors.New("mcp server: a token is required")
	}
	if o.Workspaces == nil {
		return o, errors.New("mcp server: a workspace manager is required")
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return o, fmt.Errorf("mcp server address %q: %w", o.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return o, fmt.Errorf("mcp server address %q: only loopback addresses are allowed", o.Addr)
	}
	orDefault(&o.RateLimit, DefaultRateLimit)
	orDefault(&o.Burst, DefaultBurst)
	orDefault(&o.CallTimeout, DefaultCallTimeout)
	orDefault(&o.ElicitTimeout, o.CallTimeout)
	orDefault(&o.TaskTimeout, DefaultTaskTimeout)
	orDefault(&o.MaxBody, DefaultMaxBody)
	orDefault(&o.SessionIdle, DefaultSessionIdle)
	orDefault(&o.MaxSessions, DefaultMaxSessions)
	orDefault(&o.MaxSessionsPerWorkspace, perWorkspaceShare(o.MaxSessions))
	o.MaxSessionsPerWorkspace = min(o.MaxSessionsPerWorkspace, o.MaxSessions)
	orDefault(&o.MaxConnections, DefaultMaxConnections)
	orDefault(&o.MaxUnauthenticated, DefaultMaxUnauthenticated)
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Confine == nil {
		o.Confine = func(context.Context, string) (sandbox.Plan, error) { return sandbox.Plan{}, nil }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o, nil
}

// orDefault sets a limit left zero (or negative) to its default.
func orDefault[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// newHTTPServer wraps the SDK's Streamable HTTP handlers in the access
// checks, outermost first: refuse while closing, Host, Origin, then on the
// endpoint the token, the connection's place and the body limit. Then
// each request goes to the side of its protocol era (era.go): the
// stateless handler, or the session cap and the session handler. The
// after-response hooks run on both.
func (s *Server) newHTTPServer(sdkLogger *slog.Logger) *http.Server {
	server := func(*http.Request) *sdk.Server { return s.mcp }
	sessions := sdk.NewStreamableHTTPHandler(server, &sdk.StreamableHTTPOptions{
		Logger:              sdkLogger,
		MaxRequestBodyBytes: s.opts.MaxBody,
		// Counted from the end of a session's last POST: an open event
		// stream (GET) does not keep a session alive.
		SessionTimeout: s.opts.SessionIdle,
		// DisableLocalhostProtection stays false: the SDK's DNS-rebinding
		// check runs behind checkHost as a second line.
	})
	stateless := sdk.NewStreamableHTTPHandler(server, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              sdkLogger,
		MaxRequestBodyBytes: s.opts.MaxBody,
		// The POST is the whole call: a client that gives up on it
		// cancels the call, as notifications/cancelled does in a session.
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(Path, checkToken(s.ids, s.gate.requireAuthPlace(limitBody(s.opts.MaxBody,
		byEra(s.trackCalls(stateless), s.limitSessions(s.trackCalls(sessions)))))))
	return &http.Server{
		Handler:           s.refuseWhenClosing(checkHost(&s.port, checkOrigin(mux))),
		ConnState:         s.trackNewConns,
		ConnContext:       connContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

const instructions = `CodeHydra runs one coding agent per git worktree ("workspace") of a project.
Tools named workspace_* act on the workspace of the calling agent, named by the X-Workspace-Path header that CodeHydra configures for you; they never act on another workspace.
project_list shows your project and its workspaces; workspace_create starts a new workspace (a new branch and worktree) in your project, with its own agent.`

var errShutDown = errors.New("the MCP server is shut down")

// Listen binds the listener once and keeps it. With a fixed port that is
// taken (or otherwise refused) it binds a free port instead and logs a
// warning; Port and URL report the port actually bound. Calling Listen
// again does nothing.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return errShutDown
	}
	if s.ln != nil {
		return nil
	}
	b, err := bindAddr(s.listen, s.opts.Addr)
	if err != nil {
		return err
	}
	s.use(b)
	return nil
}

// Binding is a listener on the MCP server's address, and the fixed port
// that was wanted but taken (0: none).
type Binding struct {
	Listener net.Listener
	// Wanted is the fixed port that was taken, and Refused why.
	Wanted  int
	Refused error
}

// Bind binds addr as Listen does: a fixed port that is taken falls back
// to a free one, which the Binding says.
func Bind(addr string) (*Binding, error) { return bindAddr(net.Listen, addr) }

func bindAddr(listen func(network, addr string) (net.Listener, error), addr string) (*Binding, error) {
	ln, err := listen("tcp", addr)
	if err == nil {
		return &Binding{Listener: ln}, nil
	}
	host, port, _ := net.SplitHostPort(addr)
	if port == "0" {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	refused := err
	ln, err = listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", net.JoinHostPort(host, "0"), err)
	}
	wanted, _ := strconv.Atoi(port)
	return &Binding{Listener: ln, Wanted: wanted, Refused: refused}, nil
}

// use takes b as the server's listener (under s.mu, or before anyone else
// sees s).
func (s *Server) use(b *Binding) {
	if b.Wanted != 0 {
		s.wantedPort = b.Wanted
		s.log.Warn("the fixed MCP port is taken by another program: using another port. MCP clients set up with the fixed port now reach that program instead; give them a new config (codehydra mcp-config) or free the port and restart CodeHydra",
			slog.String("wanted", s.opts.Addr), slog.String("using", b.Listener.Addr().String()), slog.Any("error", b.Refused))
	}
	// Connections that send nothing time out (ReadHeaderTimeout), idle
	// ones too (IdleTimeout); one refused before its token is closed, and
	// one without a token yet gives its place to a newer one (connGate),
	// so only clients with a token can hold places.
	s.ln = s.gate.listener(b.Listener)
	s.port.Store(int32(b.Listener.Addr().(*net.TCPAddr).Port))
}

// PortNotice says, when the fixed port of the settings was taken and
// Listen bound another one, what that means for clients; "" otherwise.
func (s *Server) PortNotice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wantedPort == 0 {
		return ""
	}
	// Short: the tray shows it as one menu line.
	return fmt.Sprintf("MCP port %d is taken: using %d; copy MCP configs again", s.wantedPort, s.Port())
}

// Port is the bound port, 0 before Listen.
func (s *Server) Port() int { return int(s.port.Load()) }

// URL is the endpoint's URL, e.g. http://127.0.0.1:4321/mcp, "" before Listen.
func (s *Server) URL() string {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return ""
	}
	a := ln.Addr().(*net.TCPAddr)
	return "http://" + net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port)) + Path
}

// Sessions counts the MCP sessions currently open (of clients of
// protocol 2025-11-25 and before: a stateless request opens none).
func (s *Server) Sessions() int {
	n := 0
	for ss := range s.mcp.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// Serve listens (if Listen was not called) and serves until Shutdown is
// called or ctx is done; in the latter case it shuts down itself, giving
// running calls and background deletes 5 s. It returns nil after a clean
// shutdown.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		if errors.Is(err, errShutDown) {
			return nil // like http.Server.Serve after Shutdown
		}
		return err
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	s.log.Info("MCP server listening", slog.String("url", s.URL()))
	if s.opts.Subscribe != nil {
		events, unsubscribe := s.opts.Subscribe()
		followCtx, stop := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			s.followWorkspaces(followCtx, events)
		}()
		defer func() { stop(); unsubscribe(); <-followed }()
	}
	defer s.gw.start(ctx)()
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve MCP: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.Shutdown(sctx)
		<-errc
		return err
	}
}

// Shutdown stops the server: it refuses new requests, closes the listener
// and every MCP session, waits for running requests, ends the gateway calls
// held for their clients' answers (which no request can bring now), waits
// for background deletes until ctx is done, then cancels what is left.
// No goroutine of the server survives it (save a handler that ignores its
// cancelled context).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	ln := s.ln
	s.mu.Unlock()

	// Sessions first: an open event stream (GET) never becomes idle, so
	// http.Server.Shutdown would wait for it until ctx ends.
	s.closeSessions()
	var errs []error
	// http.Server.Shutdown waits up to 5 s for a connection that was
	// accepted but has sent no request yet (Go's HTTP client dials spares
	// that it may never use): it carries no call, so close it now.
	s.closeNewConns()
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop MCP server: %w", err))
		s.http.Close()
	}
	// No answer can reach a held call now.
	s.held.end(func(caller) bool { return true })
	if ln != nil {
		// Serve may never have run; then http.Server does not know ln.
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("close MCP listener: %w", err))
		}
	}
	// A session may have been created by a request that was already past
	// the closing check.
	s.closeSessions()

	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("MCP shutdown: cancelling background work that did not finish in time")
		s.bgCancel()
		<-done
	}
	s.bgCancel()
	if err := s.audit.close(); err != nil {
		errs = append(errs, fmt.Errorf("close audit log: %w", err))
	}
	return errors.Join(errs...)
}

// trackNewConns keeps the connections that have sent no request yet, for
// closeNewConns.
func (s *Server) trackNewConns(c net.Conn, state http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if state == http.StateNew {
		if s.newConns == nil {
			s.newConns = map[net.Conn]struct{}{}
		}
		s.newConns[c] = struct{}{}
		return
	}
	delete(s.newConns, c)
}

// closeNewConns closes the connections that have sent no request yet.
func (s *Server) closeNewConns() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.newConns {
		c.Close()
		delete(s.newConns, c)
	}
}

func (s *Server) closeSessions() {
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
}

func (s *Server) refuseWhenClosing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			w.Header().Set("Connection", "close")
			http.Error(w, "CodeHydra is shutting down", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}
