package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Tool names, as DESIGN.md lists them (project_add and project_remove serve
// the `codehydra project add|remove` commands).
const (
	ToolGetStatus       = "workspace_get_status"
	ToolGetMetadata     = "workspace_get_metadata"
	ToolSetMetadata     = "workspace_set_metadata"
	ToolGetOpencodePort = "workspace_get_opencode_port"
	ToolDelete          = "workspace_delete"
	ToolCreate          = "workspace_create"
	ToolProjectList     = "project_list"
	ToolProjectAdd      = "project_add"
	ToolProjectRemove   = "project_remove"
)

// metadataKeyPattern is DESIGN.md's rule for metadata keys; the workspace
// domain enforces it too, the schema tells the model up front.
const metadataKeyPattern = `^[A-Za-z][A-Za-z0-9-]*$`

// toolSpec says how the call pipeline treats a tool.
type toolSpec struct {
	// needsWorkspace: the call acts on the workspace named by
	// X-Workspace-Path, which must resolve before the handler runs.
	needsWorkspace bool
}

type (
	noInput struct{}

	setMetadataInput struct {
		Key   string  `json:"key" jsonschema:"metadata key: a letter, then letters, digits or '-'"`
		Value *string `json:"value" jsonschema:"new value; null deletes the key"`
	}

	deleteInput struct {
		KeepBranch bool `json:"keepBranch,omitempty" jsonschema:"keep the git branch after removing the worktree (default false: the branch is deleted too)"`
	}

	createInput struct {
		ProjectPath string `json:"projectPath" jsonschema:"absolute path of the project (see project_list)"`
		Name        string `json:"name" jsonschema:"name of the new workspace; it becomes the git branch name"`
		Base        string `json:"base,omitempty" jsonschema:"branch or commit to start from; default: the project's default branch"`
	}

	projectPathInput struct {
		Path string `json:"path" jsonschema:"absolute path of the project's git repository"`
	}
)

type (
	statusOutput struct {
		Path        string                `json:"path" jsonschema:"absolute path of the workspace"`
		Name        string                `json:"name" jsonschema:"workspace name (its branch)"`
		Branch      string                `json:"branch,omitempty" jsonschema:"checked-out branch; absent on a detached HEAD"`
		ProjectPath string                `json:"projectPath" jsonschema:"absolute path of the project"`
		IsDirty     bool                  `json:"isDirty" jsonschema:"true when the worktree has uncommitted changes"`
		Base        string                `json:"base,omitempty" jsonschema:"branch the workspace is compared with"`
		Ahead       int                   `json:"ahead" jsonschema:"commits on the workspace branch that base lacks"`
		Behind      int                   `json:"behind" jsonschema:"commits on base that the workspace branch lacks"`
		Agent       workspace.AgentStatus `json:"agent" jsonschema:"what the workspace's agent sessions are doing"`
	}

	deleteOutput struct {
		Started bool `json:"started" jsonschema:"true: the deletion runs in the background"`
	}

	// ProjectEntry is one project of project_list's answer.
	ProjectEntry struct {
		Name       string                `json:"name"`
		Path       string                `json:"path"`
		Workspaces []workspace.Workspace `json:"workspaces"`
	}

	// ProjectList is project_list's answer; command-line clients decode
	// it too.
	ProjectList struct {
		Projects []ProjectEntry `json:"projects" jsonschema:"projects, sorted by path, each with its workspaces"`
	}

	removeOutput struct {
		Removed bool `json:"removed" jsonschema:"true: the project is no longer managed (its files are untouched)"`
	}
)

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
	string(workspace.CodeConflict), string(workspace.CodeRateLimited), string(workspace.CodeTimeout), string(workspace.CodeInternal),
}

func (s *Server) registerTools() map[string]toolSpec {
	specs := make(map[string]toolSpec)
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}

	addTool(s, specs, true, &sdk.Tool{
		Name:  ToolGetStatus,
		Title: "Get workspace status",
		Description: "Reports the state of your own workspace (the git worktree you are working in): its path and branch, " +
			"whether it has uncommitted changes (isDirty), how far it is ahead of or behind its base branch, and what its " +
			"agent sessions are doing (agent.type none|idle|busy|mixed with counts). Call it before committing, " +
			"merging or asking to delete the workspace.",
		Annotations: readOnly,
	}, s.getStatus)

	addTool(s, specs, true, &sdk.Tool{
		Name:  ToolGetMetadata,
		Title: "Get workspace metadata",
		Description: "Returns all metadata of your workspace as a flat object of string values. \"base\" is always present: " +
			"the branch this workspace was created from and should be merged back into. Other keys are notes that " +
			"you or the user stored with workspace_set_metadata (e.g. a ticket or a plan).",
		Annotations: readOnly,
	}, s.getMetadata)

	setIn, err := jsonschema.For[setMetadataInput](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %s: %v", ToolSetMetadata, err))
	}
	setIn.Properties["key"].Pattern = metadataKeyPattern
	addTool(s, specs, true, &sdk.Tool{
		Name:  ToolSetMetadata,
		Title: "Set workspace metadata",
		Description: "Stores a string under a key in your workspace's metadata (kept in the project's git config, so it " +
			"survives restarts); value null deletes the key. Keys start with a letter and contain only letters, digits " +
			"and '-'. Use it to remember things about this workspace, such as a ticket ID or the state of your task. " +
			"Returns null.",
		InputSchema: setIn,
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, s.setMetadata)

	addTool(s, specs, true, &sdk.Tool{
		Name:  ToolGetOpencodePort,
		Title: "Get OpenCode port",
		Description: "Returns the TCP port (a bare number) of the OpenCode server that runs your workspace's agent on " +
			"127.0.0.1, or null when none runs. Only needed to talk to that server's HTTP API directly.",
		Annotations: readOnly,
	}, s.getOpencodePort)

	addTool(s, specs, true, &sdk.Tool{
		Name:  ToolDelete,
		Title: "Delete this workspace",
		Description: "Deletes your own workspace: stops its agent (you), removes its metadata and its git worktree " +
			"(uncommitted changes are lost) and deletes its branch unless keepBranch is true. It answers " +
			"{\"started\":true} at once and the deletion continues in the background; this conversation ends " +
			"with it. Only call it when the user asked for it or your work is merged and nothing is left to do.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, s.deleteWorkspace)

	addTool(s, specs, false, &sdk.Tool{
		Name:  ToolProjectList,
		Title: "List projects",
		Description: "Lists every project (git repository) CodeHydra manages, each with its workspaces (git worktrees: " +
			"name, branch, path). Needs no workspace; use it to find a projectPath for workspace_create or to see " +
			"what other agents work on.",
		Annotations: readOnly,
	}, s.projectList)

	addTool(s, specs, false, &sdk.Tool{
		Name:  ToolCreate,
		Title: "Create a workspace",
		Description: "Creates a new workspace in a project: a new git branch named name, starting from base (default: " +
			"the project's default branch), checked out in its own worktree, with its own agent started by " +
			"CodeHydra. Returns the new workspace. Use it to hand a separate task to a new agent; the name must " +
			"be a valid branch name that does not exist yet.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, s.createWorkspace)

	addTool(s, specs, false, &sdk.Tool{
		Name:  ToolProjectAdd,
		Title: "Add a project",
		Description: "Adds a git repository to CodeHydra by its absolute path; its existing worktrees become " +
			"workspaces. Returns the project. Adding a project that is already managed returns it unchanged.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, s.projectAdd)

	addTool(s, specs, false, &sdk.Tool{
		Name:  ToolProjectRemove,
		Title: "Remove a project",
		Description: "Stops managing a project (by its absolute path) and stops its agents. No file, worktree or " +
			"branch is deleted; adding the project again brings its workspaces back.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, s.projectRemove)

	return specs
}

// addTool registers a typed tool. A tool whose output is an object gets an
// output schema that admits the success shape or the error shape, because
// clients (the TypeScript SDK among them) check structuredContent against
// the output schema even when isError is set. A tool whose output is not
// an object (Out = any) has no output schema and answers with text only:
// structuredContent must be an object in the protocol versions a session
// negotiates (up to 2025-11-25).
func addTool[In, Out any](s *Server, specs map[string]toolSpec, needsWorkspace bool, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	if reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		success, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("output schema of %s: %v", t.Name, err))
		}
		t.OutputSchema = &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{success, errorSchema()}}
	}
	sdk.AddTool(s.mcp, t, h)
	specs[t.Name] = toolSpec{needsWorkspace: needsWorkspace}
}

func errorSchema() *jsonschema.Schema {
	s, err := jsonschema.For[errorResult](nil)
	if err != nil {
		panic(fmt.Sprintf("error schema: %v", err))
	}
	s.Properties["error"].Properties["code"].Enum = errorCodes
	return s
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

type workspaceKey struct{}

func withWorkspace(ctx context.Context, ws workspace.Workspace) context.Context {
	return context.WithValue(ctx, workspaceKey{}, ws)
}

// callerWorkspace is the workspace resolved from the request's
// X-Workspace-Path; the call pipeline guarantees it for workspace tools.
func callerWorkspace(ctx context.Context) workspace.Workspace {
	ws, _ := ctx.Value(workspaceKey{}).(workspace.Workspace)
	return ws
}

func (s *Server) getStatus(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, statusOutput, error) {
	ws := callerWorkspace(ctx)
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		return nil, statusOutput{}, fail(err)
	}
	return nil, statusOutput{
		Path: ws.Path, Name: ws.Name, Branch: ws.Branch, ProjectPath: ws.ProjectPath,
		IsDirty: st.IsDirty, Base: st.Base, Ahead: st.Ahead, Behind: st.Behind, Agent: st.Agent,
	}, nil
}

func (s *Server) getMetadata(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, map[string]string, error) {
	md, err := s.opts.Workspaces.Metadata(ctx, callerWorkspace(ctx).Path)
	if err != nil {
		return nil, nil, fail(err)
	}
	if md == nil {
		md = map[string]string{}
	}
	return nil, md, nil
}

func (s *Server) setMetadata(ctx context.Context, _ *sdk.CallToolRequest, in setMetadataInput) (*sdk.CallToolResult, any, error) {
	if err := s.opts.Workspaces.SetMetadata(ctx, callerWorkspace(ctx).Path, in.Key, in.Value); err != nil {
		return nil, nil, fail(err)
	}
	return textResult("null"), nil, nil
}

func (s *Server) getOpencodePort(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, any, error) {
	if s.opts.Agents == nil {
		return textResult("null"), nil, nil
	}
	port, ok := s.opts.Agents.OpencodePort(callerWorkspace(ctx).Path)
	if !ok || port <= 0 {
		return textResult("null"), nil, nil
	}
	return textResult(strconv.Itoa(port)), nil, nil
}

// deleteWorkspace answers at once and deletes in the background. The
// delete's first step stops the calling agent, so it must not start before
// the answer is on its way: it starts once the HTTP response carrying this
// result has been flushed (afterResponse), not after a guessed delay. It
// runs with the server's context, not the request's, so that it outlives
// the call; Shutdown waits for it.
func (s *Server) deleteWorkspace(ctx context.Context, req *sdk.CallToolRequest, in deleteInput) (*sdk.CallToolResult, deleteOutput, error) {
	ws := callerWorkspace(ctx)
	s.mu.Lock()
	if s.deleting[ws.Path] {
		s.mu.Unlock()
		return nil, deleteOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "workspace %s is already being deleted", ws.Path))
	}
	s.deleting[ws.Path] = true
	s.mu.Unlock()
	if !s.reserveBackground() {
		s.doneDeleting(ws.Path)
		return nil, deleteOutput{}, fail(workspace.Errorf(workspace.CodeInternal, "CodeHydra is shutting down; delete the workspace after it restarts"))
	}

	var header http.Header
	if req.Extra != nil {
		header = req.Extra.Header
	}
	s.afterResponse(header, func() {
		s.runBackground(func(ctx context.Context) {
			defer s.doneDeleting(ws.Path)
			if err := s.opts.Workspaces.Delete(ctx, ws.Path, workspace.DeleteOptions{KeepBranch: in.KeepBranch}); err != nil {
				s.log.Warn("background workspace delete failed", slog.String("workspace", ws.Path), slog.Any("error", err))
				return
			}
			s.log.Info("workspace deleted", slog.String("workspace", ws.Path))
		})
	})
	return nil, deleteOutput{Started: true}, nil
}

func (s *Server) doneDeleting(path string) {
	s.mu.Lock()
	delete(s.deleting, path)
	s.mu.Unlock()
}

func (s *Server) projectList(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, ProjectList, error) {
	projects := s.opts.Workspaces.Projects()
	out := ProjectList{Projects: make([]ProjectEntry, 0, len(projects))}
	for _, p := range projects {
		wss, err := s.opts.Workspaces.Workspaces(p.Path)
		if workspace.CodeOf(err) == workspace.CodeProjectNotFound {
			continue // removed since Projects()
		}
		if err != nil {
			return nil, ProjectList{}, fail(err)
		}
		if wss == nil {
			wss = []workspace.Workspace{}
		}
		out.Projects = append(out.Projects, ProjectEntry{Name: p.Name, Path: p.Path, Workspaces: wss})
	}
	return nil, out, nil
}

func (s *Server) createWorkspace(ctx context.Context, _ *sdk.CallToolRequest, in createInput) (*sdk.CallToolResult, workspace.Workspace, error) {
	ws, err := s.opts.Workspaces.Create(ctx, workspace.CreateOptions{ProjectPath: in.ProjectPath, Name: in.Name, Base: in.Base})
	if err != nil {
		return nil, workspace.Workspace{}, fail(err)
	}
	return nil, ws, nil
}

func (s *Server) projectAdd(ctx context.Context, _ *sdk.CallToolRequest, in projectPathInput) (*sdk.CallToolResult, workspace.Project, error) {
	p, err := s.opts.Workspaces.AddProject(ctx, in.Path)
	if err != nil {
		return nil, workspace.Project{}, fail(err)
	}
	return nil, p, nil
}

func (s *Server) projectRemove(ctx context.Context, _ *sdk.CallToolRequest, in projectPathInput) (*sdk.CallToolResult, removeOutput, error) {
	if err := s.opts.Workspaces.RemoveProject(ctx, in.Path); err != nil {
		return nil, removeOutput{}, fail(err)
	}
	return nil, removeOutput{Removed: true}, nil
}

// toolCallMiddleware runs every tools/call through callTool.
func (s *Server) toolCallMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		call, ok := req.(*sdk.CallToolRequest)
		if method != "tools/call" || !ok {
			return next(ctx, method, req)
		}
		return s.callTool(ctx, call, func(ctx context.Context) (sdk.Result, error) { return next(ctx, method, req) })
	}
}

// callTool is the one path of every tool call: resolve the workspace (a
// workspace tool never runs for an unresolved one), take a token from the
// (workspace, tool) bucket, run the handler under the call timeout, turn
// any failure into DESIGN.md's error result, and write one audit line.
func (s *Server) callTool(ctx context.Context, req *sdk.CallToolRequest, next func(context.Context) (sdk.Result, error)) (_ sdk.Result, err error) {
	start := s.now()
	name := req.Params.Name
	rec := auditEntry{Tool: name, Args: argNames(req.Params.Arguments), Outcome: "ok"}
	defer func() {
		rec.Time = start.UTC()
		rec.DurationMs = s.now().Sub(start).Milliseconds()
		if aerr := s.audit.record(rec); aerr != nil {
			s.log.Warn("audit log", slog.Any("error", aerr))
		}
		s.log.Debug("tool call", slog.String("tool", name), slog.String("workspace", rec.Workspace),
			slog.String("outcome", rec.Outcome), slog.Int64("durationMs", rec.DurationMs))
	}()

	spec, known := s.tools[name]
	if !known {
		// The SDK answers an unknown tool with a protocol error.
		rec.Outcome = string(workspace.CodeInvalidInput)
		return next(ctx)
	}
	var header http.Header
	if extra := req.GetExtra(); extra != nil {
		header = extra.Header
	}
	var ws workspace.Workspace
	var resolveErr error
	if spec.needsWorkspace {
		rec.Workspace = strings.Join(header.Values(WorkspaceHeader), ",")
		if ws, resolveErr = s.resolve(header); resolveErr == nil {
			rec.Workspace = ws.Path
		}
	}
	// Unresolved calls share the ("", tool) bucket, so floods of bad
	// headers are limited too.
	if !s.limiter.allow(ws.Path, name) {
		return s.failed(&rec, workspace.Errorf(workspace.CodeRateLimited,
			"too many %s calls from this workspace (limit %g per second, burst %d); wait a moment and retry",
			name, float64(s.opts.RateLimit), s.opts.Burst)), nil
	}
	if resolveErr != nil {
		return s.failed(&rec, resolveErr), nil
	}

	callCtx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	res, err := next(withWorkspace(callCtx, ws))
	if err != nil {
		rec.Outcome = string(workspace.CodeInternal)
		return res, err
	}
	r, ok := res.(*sdk.CallToolResult)
	if !ok || !r.IsError {
		return res, nil
	}
	var ae *actionError
	cause := r.GetError()
	switch {
	case errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		err = workspace.Errorf(workspace.CodeTimeout, "%s did not finish within %s; retry later, or raise toolTimeoutSeconds in the settings", name, s.opts.CallTimeout)
	case errors.As(cause, &ae):
		err = ae.err
	case cause != nil:
		err = &workspace.Error{Code: workspace.CodeInvalidInput, Message: "invalid arguments: " + cause.Error()}
	default:
		err = workspace.Errorf(workspace.CodeInternal, "%s failed without a reason", name)
	}
	return s.failed(&rec, err), nil
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

// failed records err's code for the audit and returns DESIGN.md's error
// result, as JSON text and as structuredContent.
func (s *Server) failed(rec *auditEntry, err error) *sdk.CallToolResult {
	code := workspace.CodeOf(err)
	rec.Outcome = string(code)
	if code == workspace.CodeInternal {
		s.log.Warn("tool call failed", slog.String("tool", rec.Tool), slog.String("workspace", rec.Workspace), slog.Any("error", err))
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

// argNames lists the argument names of a call, for the audit log: names
// only, never values. Bounded, since a client chooses them.
func argNames(raw json.RawMessage) []string {
	const maxNames, maxLen = 16, 64
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		if len(k) > maxLen {
			k = k[:maxLen]
		}
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) > maxNames {
		names = names[:maxNames]
	}
	return names
}
