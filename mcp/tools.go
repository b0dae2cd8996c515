package mcp

// CodeHydra's own tools, declared one way: each tool's declaration is a
// function beside its handler (tools_*.go) that returns a toolDef, and
// toolDefs lists them all; registerTools adds them to the SDK server. The
// gateway's tools, which the user's own MCP servers offer, are registered
// apart (tools_gateway.go).

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names, as docs/DESIGN.md lists them (project_add and project_remove serve
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
	ToolList            = "workspace_list"
	ToolAgentSession    = "workspace_get_agent_session"
	ToolRestartAgent    = "workspace_restart_agent"
	ToolLog             = "log"
	ToolReadFile        = "workspace_read_file"
	ToolListDirectory   = "workspace_list_directory"
	ToolGetContext      = "workspace_get_context"
	ToolListTasks       = "workspace_list_tasks"
	ToolRunTask         = "workspace_run_task"
	ToolGetDiff         = "workspace_get_diff"
	ToolSendReview      = "workspace_send_review"
	ToolCreatePR        = "workspace_create_pr"
	ToolMerge           = "workspace_merge"
	ToolUpdateFromBase  = "workspace_update_from_base"
	ToolAnswer          = "workspace_answer"
	ToolHibernate       = "workspace_hibernate"
	ToolWake            = "workspace_wake"
	ToolStopTask        = "workspace_stop_task"
	ToolTaskOutput      = "workspace_task_output"
)

// toolDefs lists every tool of CodeHydra's own. It builds fresh values on
// each call: registering a tool fills in its schemas.
func toolDefs() []toolDef {
	return []toolDef{
		getStatusTool(), getMetadataTool(), setMetadataTool(), getOpencodePortTool(), deleteTool(),
		projectListTool(), createTool(), workspaceListTool(), agentSessionTool(), restartAgentTool(), logTool(),
		listTasksTool(), runTaskTool(), projectAddTool(), projectRemoveTool(),
		readFileTool(), listDirectoryTool(), getContextTool(), getDiffTool(), sendReviewTool(),
		createPRTool(),
		mergeTool(), updateFromBaseTool(), answerTool(),
		hibernateTool(), wakeTool(),
		stopTaskTool(), taskOutputTool(),
	}
}

// toolDef declares one tool: the tool as clients see it, its handler, and
// how the call pipeline treats it.
type toolDef struct {
	tool    *sdk.Tool
	handler toolHandlerOf
	// needsWorkspace: the call acts on the workspace named by
	// X-Workspace-Path, which must resolve before the handler runs.
	needsWorkspace bool
	// workspaceArg: the tool's workspace argument may name the workspace
	// it acts on (see reviewable); the user's token then needs no
	// X-Workspace-Path.
	workspaceArg bool
	// userOnly: only the user's (master) token may call the tool; a
	// workspace's token gets forbidden.
	userOnly bool
	// timeout, when set, replaces the call timeout (CallTimeout) of a
	// tool that bounds its own work.
	timeout func(*Server) time.Duration
}

// toolHandlerOf is a tool's typed handler, which adds itself to a server.
type toolHandlerOf interface {
	register(s *Server, t *sdk.Tool)
}

// typedHandler is a handler method of Server: a typed input in, a typed
// output (structuredContent) out.
type typedHandler[In, Out any] func(*Server, context.Context, *sdk.CallToolRequest, In) (*sdk.CallToolResult, Out, error)

// typed makes a handler method of Server a tool's handler, e.g.
// typed((*Server).getStatus).
func typed[In, Out any](h func(*Server, context.Context, *sdk.CallToolRequest, In) (*sdk.CallToolResult, Out, error)) typedHandler[In, Out] {
	return h
}

// bound is h bound to s, as the SDK's typed handlers are.
func (h typedHandler[In, Out]) bound(s *Server) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		return h(s, ctx, req, in)
	}
}

func (h typedHandler[In, Out]) register(s *Server, t *sdk.Tool) {
	addTool(s.mcp, t, h.bound(s))
}

// readOnly are the annotations of a tool that only reads.
func readOnly() *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
}

// noInput is the input of a tool that takes no arguments.
type noInput struct{}

// registerTools adds every tool of toolDefs to the SDK server and returns
// them by name, for the call pipeline.
func (s *Server) registerTools() map[string]toolDef {
	defs := make(map[string]toolDef)
	for _, d := range toolDefs() {
		d.handler.register(s, d.tool)
		defs[d.tool.Name] = d
	}
	return defs
}

// addTool registers a typed tool through the SDK's low-level AddTool, with
// a handler that does what sdk.AddTool's does minus the per-call work
// CodeHydra does not need (see toolHandler). A tool whose output is an
// object gets an output schema that admits the success shape or the error
// shape, because clients (the TypeScript SDK among them) check
// structuredContent against the output schema even when isError is set. A
// tool whose output is not an object (Out = any) has no output schema and
// answers with text only: structuredContent must be an object in the
// protocol versions a session negotiates (up to 2025-11-25).
func addTool[In, Out any](srv *sdk.Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	setOutputSchema[Out](t)
	if t.InputSchema == nil {
		in, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("input schema of %s: %v", t.Name, err))
		}
		t.InputSchema = in
	}
	in, err := newInputCheck(t.InputSchema)
	if err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", t.Name, err))
	}
	srv.AddTool(t, toolHandler(in, h))
}

// setOutputSchema sets the output schema of a tool whose output is an
// object: its success shape or the error shape (see addTool).
func setOutputSchema[Out any](t *sdk.Tool) {
	if reflect.TypeFor[Out]() == reflect.TypeFor[any]() {
		return
	}
	if reflect.TypeFor[Out]().Kind() == reflect.Pointer {
		// sdk.AddTool answers a nil pointer with the zero value;
		// toolHandler does not, so no tool may have one.
		panic(fmt.Sprintf("output of %s: a pointer type; use the value type", t.Name))
	}
	success, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %s: %v", t.Name, err))
	}
	t.OutputSchema = &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{success, errorSchema()}}
}
