package mcp

// The tools that need no workspace: they act on projects, or create a
// workspace in one. A workspace's token sees and creates in its
// own project only (the pipeline already refused it the project tools
// that are the user's only).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

func projectListTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolProjectList,
			Title: "List projects",
			Description: "Lists the projects (git repositories) CodeHydra manages, each with its workspaces (git worktrees: " +
				"name, branch, path). An agent sees its own project only. Use it to see what the other agents of your " +
				"project work on.",
			Annotations: readOnly(),
		},
		handler: typed((*Server).projectList),
	}
}

type (
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
)

func (s *Server) projectList(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, ProjectList, error) {
	who := callerFrom(ctx)
	projects := s.opts.Workspaces.Projects()
	out := ProjectList{Projects: make([]ProjectEntry, 0, len(projects))}
	for _, p := range projects {
		if !who.isUser() && p.Path != who.ws.ProjectPath {
			continue
		}
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

func createTool() toolDef {
	return toolDef{
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
		handler: typed((*Server).createWorkspace),
	}
}

type (
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
)

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

func (s *Server) createWorkspace(ctx context.Context, req *sdk.CallToolRequest, in createInput) (*sdk.CallToolResult, createOutput, error) {
	who := callerFrom(ctx)
	first, err := s.firstPrompt(ctx, who, in.InitialPrompt)
	if err != nil {
		return nil, createOutput{}, fail(err)
	}
	project, err := s.createIn(who, req, in.ProjectPath)
	if err != nil {
		return nil, createOutput{}, fail(err)
	}
	o := workspace.CreateOptions{ProjectPath: project, Name: in.Name, Base: in.Base}
	if !who.isUser() {
		o.CreatedBy = who.ws.Path
	}
	ws, err := s.opts.Workspaces.Create(ctx, o)
	if err != nil {
		return nil, createOutput{}, fail(err)
	}
	out := createOutput{Workspace: ws}
	if first != nil {
		// The workspace exists: a prompt that cannot be kept is told in
		// the answer, not as the call's failure.
		d, err := s.opts.Prompts.QueuePrompt(ws.Path, *first)
		if err != nil {
			s.log.Warn("first prompt not queued", "workspace", ws.Path, "err", err)
			d = workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: err.Error()}
		}
		out.Prompt = &d
	}
	return nil, out, nil
}

// MaxFirstPrompt is the largest initialPrompt, in bytes
// (workspace.MaxFirstPrompt).
const MaxFirstPrompt = workspace.MaxFirstPrompt

// agentPattern and modelPattern are the shapes of initialPrompt's agent
// and model, for the tool's schema.
const (
	agentPattern = workspace.FirstPromptAgentPattern
	modelPattern = workspace.FirstPromptModelPattern
)

// firstPrompt reads workspace_create's initialPrompt (nil if absent) and,
// without a model, picks the caller's: that of its agent's most recent user
// message (the user's own calls get opencode's default).
func (s *Server) firstPrompt(ctx context.Context, who caller, raw json.RawMessage) (*workspace.FirstPrompt, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	p, err := parseFirstPrompt(raw)
	if err != nil {
		return nil, err
	}
	if s.opts.Prompts == nil {
		return nil, workspace.Errorf(workspace.CodeInvalidInput, "this CodeHydra runs no agents, so initialPrompt cannot be delivered; leave it out")
	}
	if p.Model == "" && !who.isUser() {
		p.Model = s.opts.Prompts.RecentModel(ctx, who.ws.Path)
	}
	return &p, nil
}

// parseFirstPrompt checks an initialPrompt: a string or {"prompt",
// "agent"?, "model"?}.
func parseFirstPrompt(raw json.RawMessage) (workspace.FirstPrompt, error) {
	var p workspace.FirstPrompt
	if err := json.Unmarshal(raw, &p.Prompt); err != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return p, workspace.Errorf(workspace.CodeInvalidInput, `initialPrompt must be a string or {"prompt":string,"agent":string?,"model":"provider/model"?}: %v`, err)
		}
	}
	if err := workspace.CheckFirstPrompt(p); err != nil {
		return p, workspace.Errorf(workspace.CodeInvalidInput, "initialPrompt: %v", err)
	}
	return p, nil
}

// createIn is the project workspace_create creates in: the one asked for,
// which for a workspace's token must be its own project; by default the
// caller's project (for the user, that of the workspace X-Workspace-Path
// names).
func (s *Server) createIn(who caller, req *sdk.CallToolRequest, asked string) (string, error) {
	if who.isUser() {
		if asked != "" {
			return asked, nil
		}
		if ws, err := s.resolve(requestHeader(req)); err == nil {
			return ws.ProjectPath, nil
		}
		return "", workspace.Errorf(workspace.CodeInvalidInput,
			"projectPath is missing and %s names no workspace whose project it could default to; give the absolute path of a project (see project_list)", WorkspaceHeader)
	}
	own := who.ws.ProjectPath
	if own == "" {
		return "", workspace.Errorf(workspace.CodeForbidden, "this token belongs to no project")
	}
	if asked == "" {
		return own, nil
	}
	if filepath.IsAbs(asked) && len(asked) <= workspace.MaxPathLength {
		if real, err := filepath.EvalSymlinks(filepath.Clean(asked)); err == nil && samePath(real, own) {
			return own, nil
		}
	}
	return "", workspace.Errorf(workspace.CodeForbidden,
		"this token is the workspace %s's and creates workspaces in its own project %s only; leave projectPath out to use it", who.ws.Path, own)
}

// samePath compares two clean, symlink-free paths as the workspace domain
// does: as a whole, case-folded on Windows.
func samePath(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

func projectAddTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolProjectAdd,
			Title: "Add a project",
			Description: "Adds a git repository to CodeHydra by its absolute path; its existing worktrees become " +
				"workspaces. Returns the project. Adding a project that is already managed returns it unchanged, with alreadyAdded true. " +
				"Only for the user (the master token); an agent gets forbidden.",
			Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		},
		handler:  typed((*Server).projectAdd),
		userOnly: true,
	}
}

type projectPathInput struct {
	Path string `json:"path" jsonschema:"absolute path of the project's git repository"`
}

// ProjectAdded is project_add's answer: the project, and whether it was
// managed already (then nothing changed).
type ProjectAdded struct {
	workspace.Project
	AlreadyAdded bool `json:"alreadyAdded,omitempty" jsonschema:"true: the project was managed already and nothing changed"`
}

func (s *Server) projectAdd(ctx context.Context, _ *sdk.CallToolRequest, in projectPathInput) (*sdk.CallToolResult, ProjectAdded, error) {
	// The manager answers an add of a known project with that project, so
	// whether it is new shows only against the list from before.
	before := s.opts.Workspaces.Projects()
	p, err := s.opts.Workspaces.AddProject(ctx, in.Path)
	if err != nil {
		return nil, ProjectAdded{}, fail(err)
	}
	known := slices.ContainsFunc(before, func(q workspace.Project) bool { return q.Path == p.Path })
	return nil, ProjectAdded{Project: p, AlreadyAdded: known}, nil
}

func projectRemoveTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolProjectRemove,
			Title: "Remove a project",
			Description: "Stops managing a project (by its absolute path) and stops its agents. No file, worktree or " +
				"branch is deleted; adding the project again brings its workspaces back. Only for the user (the " +
				"master token); an agent gets forbidden.",
			Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		},
		handler:  typed((*Server).projectRemove),
		userOnly: true,
	}
}

type removeOutput struct {
	Removed bool `json:"removed" jsonschema:"true: the project is no longer managed (its files are untouched)"`
}

func (s *Server) projectRemove(ctx context.Context, _ *sdk.CallToolRequest, in projectPathInput) (*sdk.CallToolResult, removeOutput, error) {
	if err := s.opts.Workspaces.RemoveProject(ctx, in.Path); err != nil {
		return nil, removeOutput{}, fail(err)
	}
	return nil, removeOutput{Removed: true}, nil
}
