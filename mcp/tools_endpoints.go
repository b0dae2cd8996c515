package mcp

// workspace_list_endpoints: the previews of a workspace, the TCP ports its
// processes listen on (package previews finds them).

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Endpoints finds what a workspace's processes listen on; package
// previews implements it.
type Endpoints interface {
	// Of is the endpoints of the workspace at path, sorted by port.
	Of(path string) ([]workspace.Endpoint, error)
}

func listEndpointsTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolListEndpoints,
			Title: "List a workspace's endpoints",
			Description: "Lists the TCP ports that your workspace's processes listen on at 127.0.0.1 (a dev server to open " +
				"in a browser): those of the processes your agent started (source agent) and of its background task runs " +
				"(source task:<name>), each with its URL, pid and command line, also a server put in the background that left " +
				"the process that started it. The agent's own server is left out. Linux only; elsewhere an error says so.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).listEndpoints),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type (
	listEndpointsInput struct {
		Workspace string `json:"workspace,omitempty" jsonschema:"absolute path of the workspace: your own (the default) or a child of yours (one your agent created); the user may name any"`
	}

	listEndpointsOutput struct {
		Endpoints []workspace.Endpoint `json:"endpoints" jsonschema:"the ports listened on, sorted by port"`
	}
)

func (s *Server) listEndpoints(ctx context.Context, _ *sdk.CallToolRequest, in listEndpointsInput) (*sdk.CallToolResult, listEndpointsOutput, error) {
	ws, err := s.reviewable(ctx, in.Workspace)
	if err != nil {
		return nil, listEndpointsOutput{}, fail(err)
	}
	out := listEndpointsOutput{Endpoints: []workspace.Endpoint{}}
	if s.opts.Endpoints == nil {
		return nil, out, nil
	}
	found, err := s.opts.Endpoints.Of(ws.Path)
	if err != nil {
		return nil, listEndpointsOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "cannot list the ports: %v", err))
	}
	out.Endpoints = append(out.Endpoints, found...)
	return nil, out, nil
}
