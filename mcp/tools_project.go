package mcp

// Handlers of the tools that need no workspace: they act on projects, or
// create a workspace in one. A workspace's token sees and creates in its
// own project only (the pipeline already refused it the project tools
// that are the user's only).

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
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

func (s *Server) createWorkspace(ctx context.Context, req *sdk.CallToolRequest, in createInput) (*sdk.CallToolResult, workspace.Workspace, error) {
	project, err := s.createIn(callerFrom(ctx), req, in.ProjectPath)
	if err != nil {
		return nil, workspace.Workspace{}, fail(err)
	}
	ws, err := s.opts.Workspaces.Create(ctx, workspace.CreateOptions{ProjectPath: project, Name: in.Name, Base: in.Base})
	if err != nil {
		return nil, workspace.Workspace{}, fail(err)
	}
	return nil, ws, nil
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
		var h map[string][]string
		if req.Extra != nil {
			h = req.Extra.Header
		}
		if ws, err := s.resolve(h); err == nil {
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

func (s *Server) projectRemove(ctx context.Context, _ *sdk.CallToolRequest, in projectPathInput) (*sdk.CallToolResult, removeOutput, error) {
	if err := s.opts.Workspaces.RemoveProject(ctx, in.Path); err != nil {
		return nil, removeOutput{}, fail(err)
	}
	return nil, removeOutput{Removed: true}, nil
}
