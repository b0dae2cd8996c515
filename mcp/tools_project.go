package mcp

// Handlers of the tools that need no workspace: they act on projects, or
// create a workspace in one.

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

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
