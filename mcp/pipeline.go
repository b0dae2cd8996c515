package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/tracectx"
	"codehydra/workspace"
)

// The call pipeline: every JSON-RPC request takes a token from its
// caller's bucket (rateLimit), and every tools/call passes through
// callTool, which checks what the caller (as its token proves) may do,
// resolves the workspace the call acts on, applies the rate limit and the
// call timeout, turns every failure into docs/DESIGN.md's error result and
// writes one audit line. The handlers (tools_*.go) only adapt domain
// calls. callTool is the one place where every tool call starts and ends
// (recordCall runs as it returns), and toolCallMiddleware the one where
// every request does: the hooks for tracing and metrics.

// toolCallMiddleware runs every request through the rate limit and every
// tools/call through callTool.
func (s *Server) toolCallMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
		ctx = tracectx.Extract(ctx, requestMeta(req), requestHeader(req))
		ctx, end := s.tel.startRequest(ctx, method)
		defer func() { end(err) }()
		takePlace(ctx, sessionOf(ctx, req))
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok && method == "subscriptions/listen" && isStateless(ctx) {
			defer s.places.listening(ss, callerOf(req))()
		}
		call, ok := req.(*sdk.CallToolRequest)
		if method != "tools/call" || !ok {
			if err := s.limitMethod(method, req); err != nil {
				return nil, err
			}
			switch method {
			case "subscriptions/listen":
				if lr, ok := req.(*sdk.SubscriptionsListenRequest); ok {
					end, err := s.listenGateway(ctx, lr)
					if err != nil {
						return nil, err
					}
					defer end()
				}
				return next(ctx, method, req)
			case "resources/list", "resources/templates/list", "prompts/list":
				res, err := next(ctx, method, req)
				if err == nil {
					s.gw.filterList(sessionOf(ctx, req), callerOf(req).ws.Path, res)
				}
				return res, err
			case "resources/read", "prompts/get", "resources/subscribe", "resources/unsubscribe":
				server, ok := s.gw.gatewayRequest(req)
				if !ok {
					return next(ctx, method, req)
				}
				res, err := s.forwardGateway(ctx, method, server, req)
				if q, ok := res.(askedInResult); ok {
					return next(context.WithValue(ctx, askedKey{}, q.Result), method, req)
				}
				if err != nil || res != nil {
					return res, err
				}
				// A subscription passed on: the SDK records it, for
				// ResourceUpdated.
				return next(ctx, method, req)
			}
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			s.gw.awaitFirst(ctx)
			res, err := next(ctx, method, req)
			if lr, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				s.gw.shown(sessionOf(ctx, req), callerOf(req).ws.Path, lr)
			}
			return res, err
		}
		return s.callTool(ctx, call, func(ctx context.Context) (sdk.Result, error) { return next(ctx, method, req) })
	}
}

// requestMeta is the _meta of req's params, nil when it has none.
func requestMeta(req sdk.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}

// limitMethod takes a token from the caller's bucket of a method other
// than tools/call, and returns the JSON-RPC error of an empty one. The
// user's bucket is the one of the workspace its X-Workspace-Path names.
func (s *Server) limitMethod(method string, req sdk.Request) error {
	who := callerOf(req)
	scope := ""
	if extra := req.GetExtra(); who.isUser() && extra != nil && len(extra.Header.Values(WorkspaceHeader)) > 0 {
		if ws, err := s.resolve(extra.Header); err == nil {
			scope = ws.Path
		}
	}
	if s.limiter.allow(limitKey(who, scope, method)) {
		return nil
	}
	return &jsonrpc.Error{Code: codeServerBusy, Message: string(workspace.CodeRateLimited) + ": " + s.rateLimitMessage(method)}
}

// rateLimitMessage says that op was refused by the rate limit.
func (s *Server) rateLimitMessage(op string) string {
	return fmt.Sprintf("too many %s calls from this caller (limit %g per second, burst %d); wait a moment and retry",
		op, float64(s.opts.RateLimit), s.opts.Burst)
}

// callTool is the one path of every tool call: check the caller's right
// to the tool and resolve the workspace (a workspace tool never runs for
// an unresolved one, nor for a workspace the caller's token is not for),
// take a token from the caller's bucket of the tool (one bucket for all
// unknown tools), run the handler under the call timeout, turn any
// failure into docs/DESIGN.md's error result, and write one audit line.
func (s *Server) callTool(ctx context.Context, req *sdk.CallToolRequest, next func(context.Context) (sdk.Result, error)) (sdk.Result, error) {
	start := s.now()
	who := callerOf(req)
	rec := auditEntry{Caller: who.name(), Tool: req.Params.Name, Args: argNames(req.Params.Arguments),
		ArgHashes: taskArgHashes(req.Params.Name, req.Params.Arguments), Review: reviewSizeOf(req.Params.Name, req.Params.Arguments), Outcome: "ok"}
	ctx = s.tel.startCall(ctx, rec.Tool)
	defer func() {
		s.recordCall(&rec, start)
		s.tel.endCall(ctx, &rec, who, s.now().Sub(start))
	}()

	def, known := s.tools[rec.Tool]
	if gt, ok := s.gw.lookup(rec.Tool); !known && ok {
		return s.callGateway(ctx, &rec, who, gt, req, next)
	}
	if !known {
		if !s.limiter.allow(limitKey(who, "", opUnknownTool)) {
			return s.failed(&rec, workspace.Errorf(workspace.CodeRateLimited, "%s", s.rateLimitMessage("unknown-tool"))), nil
		}
		// The SDK answers an unknown tool with a protocol error.
		rec.Outcome = string(workspace.CodeInvalidInput)
		return next(ctx)
	}
	ws, err := s.admit(&rec, who, def, req)
	if err != nil {
		return s.failed(&rec, err), nil
	}

	timeout := s.opts.CallTimeout
	if def.timeout != nil {
		timeout = def.timeout(s)
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := next(withCall(callCtx, who, ws))
	if err != nil {
		rec.Outcome = string(workspace.CodeInternal)
		return res, err
	}
	r, ok := res.(*sdk.CallToolResult)
	if !ok || !r.IsError {
		return res, nil
	}
	return s.failed(&rec, s.callError(ctx, callCtx, rec.Tool, r)), nil
}

// requestHeader is the HTTP header of the request that carried req (nil
// when there is none, e.g. in process).
func requestHeader(req sdk.Request) http.Header {
	if extra := req.GetExtra(); extra != nil {
		return extra.Header
	}
	return nil
}

// admit checks that the caller may call the tool, resolves the workspace
// of a call to a workspace tool and takes a token from the caller's
// bucket of the tool. The workspace it returns is the zero Workspace
// for a tool that needs none.
func (s *Server) admit(rec *auditEntry, who caller, def toolDef, req *sdk.CallToolRequest) (workspace.Workspace, error) {
	header := requestHeader(req)
	var ws workspace.Workspace
	var err error
	switch {
	case def.needsWorkspace && def.workspaceArg && who.isUser() && len(header.Values(WorkspaceHeader)) == 0:
		// The handler resolves the workspace its argument names.
	case def.needsWorkspace:
		rec.Workspace = strings.Join(header.Values(WorkspaceHeader), ",")
		if ws, err = s.workspaceOf(who, header); err == nil {
			rec.Workspace = ws.Path
		}
	case def.userOnly && !who.isUser():
		err = workspace.Errorf(workspace.CodeForbidden,
			"%s needs the user's token; a workspace's token (this one is for %s) may not add or remove projects", rec.Tool, who.ws.Path)
	}
	// The user's unresolved calls share its ("", tool) bucket, so floods
	// of bad headers are limited too.
	if !s.limiter.allow(limitKey(who, ws.Path, rec.Tool)) {
		return ws, workspace.Errorf(workspace.CodeRateLimited, "%s", s.rateLimitMessage(rec.Tool))
	}
	return ws, err
}

// workspaceOf is the workspace a call to a workspace tool acts on: the one
// X-Workspace-Path names, which for a workspace's token must be that
// workspace (and is, when the header is left out).
func (s *Server) workspaceOf(who caller, h http.Header) (workspace.Workspace, error) {
	if who.isUser() {
		return s.resolve(h)
	}
	vals := h.Values(WorkspaceHeader)
	if len(vals) == 0 || len(vals) == 1 && vals[0] == "" {
		return who.ws, nil
	}
	ws, err := s.resolve(h)
	if workspace.CodeOf(err) == workspace.CodeInvalidInput {
		return ws, err
	}
	// Whether another path is a workspace at all is none of this caller's
	// business: every other answer is the same.
	if err != nil || ws.Path != who.ws.Path {
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeForbidden,
			"this token is the workspace %s's and acts on it only; %s names another folder (leave the header out to act on your own workspace)", who.ws.Path, WorkspaceHeader)
	}
	return ws, nil
}

// callError is the error that a handler's error result stands for: a
// timeout when the call's own deadline passed (not the client's), the
// action's error, or invalid input when the SDK rejected the arguments.
func (s *Server) callError(ctx, callCtx context.Context, name string, r *sdk.CallToolResult) error {
	var ae *actionError
	cause := r.GetError()
	switch {
	case errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return workspace.Errorf(workspace.CodeTimeout, "%s did not finish within %s; retry later, or raise toolTimeoutSeconds in the settings", name, s.opts.CallTimeout)
	case errors.As(cause, &ae):
		return ae.err
	case cause != nil:
		return &workspace.Error{Code: workspace.CodeInvalidInput, Message: "invalid arguments: " + cause.Error()}
	default:
		return workspace.Errorf(workspace.CodeInternal, "%s failed without a reason", name)
	}
}

// recordCall writes the audit line of a finished call and logs it at
// debug level.
func (s *Server) recordCall(rec *auditEntry, start time.Time) {
	rec.Time = start.UTC()
	rec.DurationMs = s.now().Sub(start).Milliseconds()
	if err := s.audit.record(*rec); err != nil {
		s.log.Warn("audit log", slog.Any("error", err))
	}
	s.log.Debug("tool call", slog.String("caller", rec.Caller), slog.String("tool", rec.Tool), slog.String("workspace", rec.Workspace),
		slog.String("outcome", rec.Outcome), slog.Int64("durationMs", rec.DurationMs))
}

// resolve names the workspace of a request by its X-Workspace-Path header.
func (s *Server) resolve(h http.Header) (workspace.Workspace, error) {
	vals := h.Values(WorkspaceHeader)
	switch {
	case len(vals) == 0 || len(vals) == 1 && vals[0] == "":
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeInvalidInput,
			"the %s header is missing: workspace tools act on the workspace it names (CodeHydra sets it for its agents; `codehydra mcp-config --workspace PATH` prints a client config with it)", WorkspaceHeader)
	case len(vals) > 1:
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeInvalidInput, "the %s header was sent %d times; send it once", WorkspaceHeader, len(vals))
	}
	return s.opts.Workspaces.Resolve(vals[0])
}

// callInfo is what the pipeline learned of a call before its handler runs.
type callInfo struct {
	who caller
	ws  workspace.Workspace
}

type callKey struct{}

func withCall(ctx context.Context, who caller, ws workspace.Workspace) context.Context {
	return context.WithValue(ctx, callKey{}, callInfo{who: who, ws: ws})
}

// callerWorkspace is the workspace the call acts on, resolved from the
// request's X-Workspace-Path (or the caller's token); the call pipeline
// guarantees it for workspace tools.
func callerWorkspace(ctx context.Context) workspace.Workspace {
	c, _ := ctx.Value(callKey{}).(callInfo)
	return c.ws
}

// callerFrom is the caller of the call, as its token proves.
func callerFrom(ctx context.Context) caller {
	c, ok := ctx.Value(callKey{}).(callInfo)
	if !ok {
		return unidentified()
	}
	return c.who
}

// actionError marks an error returned by a tool's action, as opposed to the
// SDK's rejection of the arguments (which becomes invalid-input).
type actionError struct{ err error }

func (e *actionError) Error() string { return e.err.Error() }
func (e *actionError) Unwrap() error { return e.err }

func fail(err error) error { return &actionError{err} }

// textResult is a successful result whose only content is the JSON text v,
// for outputs that are not objects (null, a number).
func textResult(v string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: v}}}
}

// errorResult is the structured content of every failed call.
type errorResult struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code" jsonschema:"machine-readable error code"`
	Message string `json:"message" jsonschema:"what went wrong and what to do next"`
}

var errorCodes = []any{
	string(workspace.CodeWorkspaceNotFound), string(workspace.CodeProjectNotFound), string(workspace.CodeInvalidInput),
	string(workspace.CodeConflict), string(workspace.CodeForbidden), string(workspace.CodeRateLimited), string(workspace.CodeTimeout), string(workspace.CodeInternal),
}

func errorSchema() *jsonschema.Schema {
	s, err := jsonschema.For[errorResult](nil)
	if err != nil {
		panic(fmt.Sprintf("error schema: %v", err))
	}
	s.Properties["error"].Properties["code"].Enum = errorCodes
	return s
}

// failed records err's code for the audit and returns docs/DESIGN.md's error
// result, as JSON text and as structuredContent.
func (s *Server) failed(rec *auditEntry, err error) *sdk.CallToolResult {
	code := workspace.CodeOf(err)
	rec.Outcome = string(code)
	if code == workspace.CodeInternal {
		s.log.Warn("tool call failed", slog.String("caller", rec.Caller), slog.String("tool", rec.Tool), slog.String("workspace", rec.Workspace), slog.Any("error", err))
	}
	return errorToolResult(code, err.Error())
}

func errorToolResult(code workspace.Code, message string) *sdk.CallToolResult {
	data, err := json.Marshal(errorResult{Error: errorBody{Code: string(code), Message: message}})
	if err != nil {
		// Unreachable: two strings always marshal.
		data = []byte(`{"error":{"code":"internal-error","message":"cannot encode error"}}`)
	}
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: string(data)}},
		StructuredContent: json.RawMessage(data),
	}
}
