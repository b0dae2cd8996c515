package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
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
)

// metadataKeyPattern is docs/DESIGN.md's rule for metadata keys; the workspace
// domain enforces it too, the schema tells the model up front.
const metadataKeyPattern = `^[A-Za-z][A-Za-z0-9-]*$`

// toolDef is one row of the tool table: the tool as clients see it, and
// how the call pipeline treats it.
type toolDef struct {
	// needsWorkspace: the call acts on the workspace named by
	// X-Workspace-Path, which must resolve before the handler runs.
	needsWorkspace bool
	// userOnly: only the user's (master) token may call the tool; a
	// workspace's token gets forbidden.
	userOnly bool
	// register adds tool to s with its typed handler bound to s.
	register func(s *Server, tool *sdk.Tool)
	tool     *sdk.Tool
	// timeout, when set, replaces the call timeout (CallTimeout) of a
	// tool that bounds its own work.
	timeout func(*Server) time.Duration
}

type (
	noInput struct{}

	setMetadataInput struct {
		Key   string  `json:"key" jsonschema:"metadata key: a letter, then letters, digits or '-'"`
		Value *string `json:"value" jsonschema:"new value; null deletes the key"`
	}

	deleteInput struct {
		KeepBranch bool `json:"keepBranch,omitempty" jsonschema:"keep the git branch after removing the worktree (default false: the branch is deleted too if CodeHydra created it; a branch that existed before the workspace is kept unless deleteBranch)"`
		// DeleteBranch asks to delete a branch that existed before the
		// workspace too; keepBranch wins.
		DeleteBranch bool `json:"deleteBranch,omitempty" jsonschema:"also delete the branch when it existed before the workspace (default false: such a branch is kept); keepBranch wins"`
	}

	createInput struct {
		ProjectPath string `json:"projectPath,omitempty" jsonschema:"absolute path of the project (see project_list); default: your own workspace's project, the only one an agent may create workspaces in"`
		Name        string `json:"name" jsonschema:"name of the new workspace; it becomes the git branch name"`
		Base        string `json:"base,omitempty" jsonschema:"branch or commit to start from; default: the project's default branch"`
		// InitialPrompt is a string or {"prompt","agent","model"}; its
		// schema is set by createSchema.
		InitialPrompt json.RawMessage `json:"initialPrompt,omitempty"`
	}

	// createOutput is workspace_create's answer: the workspace, and what
	// became of its first prompt so far.
	createOutput struct {
		workspace.Workspace
		Prompt *workspace.PromptDelivery `json:"prompt,omitempty" jsonschema:"the first prompt's delivery: pending until the new agent is ready (the answer does not wait for it), then delivered (with sessionId) or failed (with error)"`
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
		Projects []ProjectEntry `json:"projects" jsonschema:"projects sorted by name (ignoring case), then path, each with its workspaces sorted the same way"`
	}

	removeOutput struct {
		Removed bool `json:"removed" jsonschema:"true: the project is no longer managed (its files are untouched)"`
	}
)

// toolTable declares every tool. It builds fresh values on each call:
// registering a tool fills in its output schema.
func toolTable() []toolDef {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	return []toolDef{
		{
			needsWorkspace: true,
			register:       bind((*Server).getStatus),
			tool: &sdk.Tool{
				Name:  ToolGetStatus,
				Title: "Get workspace status",
				Description: "Reports the state of your own workspace (the git worktree you are working in): its path and branch, " +
					"whether it has uncommitted changes (isDirty), how far it is ahead of or behind its base branch, and what its " +
					"agent sessions are doing (agent.type none|idle|busy|mixed with counts). Call it before committing, " +
					"merging or asking to delete the workspace.",
				Annotations: readOnly,
			},
		},
		{
			needsWorkspace: true,
			register:       bind((*Server).getMetadata),
			tool: &sdk.Tool{
				Name:  ToolGetMetadata,
				Title: "Get workspace metadata",
				Description: "Returns all metadata of your workspace as a flat object of string values. \"base\" is always present: " +
					"the branch this workspace was created from and should be merged back into. Other keys are notes that " +
					"you or the user stored with workspace_set_metadata (e.g. a ticket or a plan).",
				Annotations: readOnly,
			},
		},
		{
			needsWorkspace: true,
			register:       bind((*Server).setMetadata),
			tool: &sdk.Tool{
				Name:  ToolSetMetadata,
				Title: "Set workspace metadata",
				Description: "Stores a string under a key in your workspace's metadata (kept in the project's git config, so it " +
					"survives restarts); value null deletes the key. Keys start with a letter and contain only letters, digits " +
					"and '-'. Use it to remember things about this workspace, such as a ticket ID or the state of your task. " +
					"Returns null.",
				InputSchema: setMetadataSchema(),
				Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
			},
		},
		{
			needsWorkspace: true,
			register:       bind((*Server).getOpencodePort),
			tool: &sdk.Tool{
				Name:  ToolGetOpencodePort,
				Title: "Get OpenCode port",
				Description: "Returns the TCP port (a bare number) of the OpenCode server that runs your workspace's agent on " +
					"127.0.0.1, or null when none runs. Only needed to talk to that server's HTTP API directly.",
				Annotations: readOnly,
			},
		},
		{
			needsWorkspace: true,
			register:       bind((*Server).deleteWorkspace),
			tool: &sdk.Tool{
				Name:  ToolDelete,
				Title: "Delete this workspace",
				Description: "Deletes your own workspace: stops its agent (you), removes its metadata and its git worktree " +
					"(uncommitted changes are lost) and deletes its branch, if CodeHydra created it, unless keepBranch is true. It answers " +
					"{\"started\":true} at once and the deletion continues in the background; this conversation ends " +
					"with it. Only call it when the user asked for it or your work is merged and nothing is left to do.",
				Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
			},
		},
		{
			needsWorkspace: false,
			register:       bind((*Server).projectList),
			tool: &sdk.Tool{
				Name:  ToolProjectList,
				Title: "List projects",
				Description: "Lists the projects (git repositories) CodeHydra manages, each with its workspaces (git worktrees: " +
					"name, branch, path). An agent sees its own project only. Use it to see what the other agents of your " +
					"project work on.",
				Annotations: readOnly,
			},
		},
		{
			needsWorkspace: false,
			register:       bind((*Server).createWorkspace),
			tool: &sdk.Tool{
				Name:  ToolCreate,
				Title: "Create a workspace",
				Description: "Creates a new workspace in your project (an agent may not create one in another project): a new " +
					"git branch named name, starting from base (default: the project's default branch), checked out in its " +
					"own worktree, with its own agent started by CodeHydra. Returns the new workspace. Use it to hand a " +
					"separate task to a new agent; the name must be a valid branch name. A branch of that name that exists " +
					"and is checked out nowhere is reused as it is, with its metadata and recorded base (base does not apply " +
					"to it); the answer then has branchReused true and a note saying so. With initialPrompt (a string, or " +
					"{\"prompt\",\"agent\",\"model\"}; at most 64 KiB) the new agent is given that task as soon as it is ready, " +
					"once, in a new session, with your current model unless model says otherwise; the answer comes before " +
					"that, with prompt.state \"pending\". The new workspace records you in its createdBy metadata.",
				InputSchema: createSchema(),
				Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
			},
		},
		{
			needsWorkspace: false,
			register:       bind((*Server).workspaceList),
			tool: &sdk.Tool{
				Name:  ToolList,
				Title: "List workspaces",
				Description: "Lists the workspaces of your project (the user: of the project of the workspace X-Workspace-Path " +
					"names, or of every project without it): name, branch, path, isDirty, ahead/behind its base, the agent's " +
					"state (agent.state, agent.type idle|busy, agent.needsInput) and createdBy (the workspace whose agent created " +
					"it). For the workspaces you created with workspace_create it also gives the first prompt's delivery " +
					"(prompt.state pending|delivered|failed, prompt.error) and the agent's last reply (lastReply.text, cut at " +
					"4 KiB with truncated true). Use it to follow the agents you handed work to; you can read them, not act on them.",
				Annotations: readOnly,
			},
		},
		{
			needsWorkspace: true,
			register:       bind((*Server).getAgentSession),
			tool: &sdk.Tool{
				Name:  ToolAgentSession,
				Title: "Get your agent's session",
				Description: "Returns the port of your own agent's OpenCode server on 127.0.0.1 and the ID of its current " +
					"session (the one updated last): {\"port\":n,\"sessionId\":\"ses_…\"}, each null when there is none.",
				Annotations: readOnly,
			},
		},
		{
			needsWorkspace: true,
			register:       bind((*Server).restartAgent),
			tool: &sdk.Tool{
				Name:  ToolRestartAgent,
				Title: "Restart your agent",
				Description: "Restarts your own agent (the OpenCode server you run in), e.g. to pick up a changed opencode " +
					"config. It answers {\"restarting\":true} first; the restart then ends this turn, and the conversation " +
					"continues in the restarted server. Only call it when the user asked for it or a config change needs it.",
				Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
			},
		},
		{
			needsWorkspace: false,
			register:       bind((*Server).logLine),
			tool: &sdk.Tool{
				Name:  ToolLog,
				Title: "Write to CodeHydra's log",
				Description: "Writes one line into CodeHydra's log, attributed to you: level (debug, info, warn, error), a " +
					"one-line message (cut at 1000 bytes) and an optional flat context map of string, number or boolean " +
					"values. Use it to leave a trace the user can find later (e.g. a step of a long task); never log secrets.",
				InputSchema: logSchema(),
				Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
			},
		},
		listTasksTool(readOnly),
		runTaskTool(),
		{
			userOnly: true,
			register: bind((*Server).projectAdd),
			tool: &sdk.Tool{
				Name:  ToolProjectAdd,
				Title: "Add a project",
				Description: "Adds a git repository to CodeHydra by its absolute path; its existing worktrees become " +
					"workspaces. Returns the project. Adding a project that is already managed returns it unchanged, with alreadyAdded true. " +
					"Only for the user (the master token); an agent gets forbidden.",
				Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
			},
		},
		{
			userOnly: true,
			register: bind((*Server).projectRemove),
			tool: &sdk.Tool{
				Name:  ToolProjectRemove,
				Title: "Remove a project",
				Description: "Stops managing a project (by its absolute path) and stops its agents. No file, worktree or " +
					"branch is deleted; adding the project again brings its workspaces back. Only for the user (the " +
					"master token); an agent gets forbidden.",
				Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
			},
		},
	}
}

// setMetadataSchema is workspace_set_metadata's input schema, with the
// key's pattern that struct tags cannot express.
func setMetadataSchema() *jsonschema.Schema {
	in, err := jsonschema.For[setMetadataInput](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %s: %v", ToolSetMetadata, err))
	}
	in.Properties["key"].Pattern = metadataKeyPattern
	return in
}

// createSchema is workspace_create's input schema: initialPrompt is a
// string or an object, which struct tags cannot express.
func createSchema() *jsonschema.Schema {
	in, err := jsonschema.For[createInput](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %s: %v", ToolCreate, err))
	}
	text := func() *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", MinLength: new(1), MaxLength: new(MaxFirstPrompt),
			Description: "the task for the new agent, in the words you would type to it"}
	}
	in.Properties["initialPrompt"] = &jsonschema.Schema{
		Description: "optional first prompt for the new workspace's agent: a string, or an object",
		AnyOf: []*jsonschema.Schema{text(), {
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"prompt": text(),
				"agent":  {Type: "string", Pattern: agentPattern, Description: "opencode agent to run it with, e.g. build or plan; default: opencode's default agent"},
				"model":  {Type: "string", Pattern: modelPattern, Description: "provider/model, e.g. anthropic/claude-sonnet-4-5; default: the model of your own most recent user message"},
			},
			Required:             []string{"prompt"},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		}},
	}
	return in
}

// registerTools adds every tool of the table to the SDK server and returns
// the table by tool name, for the call pipeline.
func (s *Server) registerTools() map[string]toolDef {
	defs := make(map[string]toolDef)
	for _, d := range append(toolTable(), fileToolTable()...) {
		d.register(s, d.tool)
		defs[d.tool.Name] = d
	}
	return defs
}

// bind ties a handler method of Server to the tool it serves.
func bind[In, Out any](h func(*Server, context.Context, *sdk.CallToolRequest, In) (*sdk.CallToolResult, Out, error)) func(*Server, *sdk.Tool) {
	return func(s *Server, t *sdk.Tool) {
		addTool(s.mcp, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
			return h(s, ctx, req, in)
		})
	}
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
	if reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
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
