package mcp

// The workspace file tools (issue 15): read, list and sum up the caller's
// own workspace, confined to its folder by wsfs.

import (
	"context"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/tasks"
	"codehydra/workspace"
	"codehydra/wsfs"
)

// contextCommits and readmeLines bound workspace_get_context's answer.
const (
	contextCommits = 5
	readmeLines    = 40
)

// files is the confined view of the caller's workspace.
func (s *Server) files(ctx context.Context) *wsfs.FS {
	return wsfs.New(callerWorkspace(ctx).Path, s.opts.WorkspaceDeny, s.opts.Workspaces.Git)
}

func readFileTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolReadFile,
			Title: "Read a file of your workspace",
			Description: "Reads a text file of your own workspace: path relative to it (or absolute inside it). Returns " +
				"content (UTF-8) from offset, at most 256 KiB per call, with size (the whole file's bytes) and nextOffset " +
				"when more follows: call again with offset=nextOffset. A binary file answers binary true and no content. " +
				"Paths out of the workspace (.., symlinks out) are refused with \"Path outside workspace\", and so are " +
				"secrets on the deny list (.git/, .env*, *.pem, *.key, id_*).",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).readFile),
		needsWorkspace: true,
	}
}

type readFileInput struct {
	Path   string `json:"path" jsonschema:"file path relative to your workspace (or absolute inside it)"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset to start at (default 0); pass the previous answer's nextOffset for the next page"`
	Limit  int64  `json:"limit,omitempty" jsonschema:"most bytes to return (default and at most 262144)"`
}

func (s *Server) readFile(ctx context.Context, _ *sdk.CallToolRequest, in readFileInput) (*sdk.CallToolResult, wsfs.Page, error) {
	page, err := s.files(ctx).Read(in.Path, in.Offset, in.Limit)
	if err != nil {
		return nil, wsfs.Page{}, fail(err)
	}
	return nil, page, nil
}

func listDirectoryTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolListDirectory,
			Title: "List a folder of your workspace",
			Description: "Lists a folder of your own workspace (default its top) down to depth levels (default 1, at most " +
				"10): entries with path, type (file, dir, symlink; symlinks are not followed) and size. It lists what git " +
				"sees: files ignored by .gitignore and those on the deny list are left out. At most 5000 entries " +
				"(truncated true past them).",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).listDirectory),
		needsWorkspace: true,
	}
}

type listDirectoryInput struct {
	Path  string `json:"path,omitempty" jsonschema:"folder relative to your workspace (default: its top)"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels to list (default 1, at most 10)"`
}

func (s *Server) listDirectory(ctx context.Context, _ *sdk.CallToolRequest, in listDirectoryInput) (*sdk.CallToolResult, wsfs.Listing, error) {
	l, err := s.files(ctx).List(ctx, in.Path, in.Depth)
	if err != nil {
		return nil, wsfs.Listing{}, fail(err)
	}
	return nil, l, nil
}

func getContextTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolGetContext,
			Title: "Get your workspace's context",
			Description: "One call to find your bearings in your own workspace: its branch, base branch and how far it is " +
				"ahead of or behind it, the changed and untracked files, the last 5 commits, the top-level files and " +
				"folders, the tasks found (justfile, Makefile, package.json), the first 40 lines of the README and the ports " +
				"your dev servers should listen on.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).getContext),
		needsWorkspace: true,
	}
}

type (
	contextOutput struct {
		Path      string               `json:"path" jsonschema:"absolute path of the workspace"`
		Branch    string               `json:"branch,omitempty" jsonschema:"checked-out branch; absent on a detached HEAD"`
		Base      string               `json:"base,omitempty" jsonschema:"branch the workspace is compared with"`
		Ahead     int                  `json:"ahead" jsonschema:"commits on the workspace branch that base lacks"`
		Behind    int                  `json:"behind" jsonschema:"commits on base that the workspace branch lacks"`
		Changed   []string             `json:"changed" jsonschema:"tracked files with staged or unstaged changes"`
		Untracked []string             `json:"untracked" jsonschema:"untracked files git does not ignore (a folder ends in /)"`
		Commits   []wsfs.Commit        `json:"commits" jsonschema:"the last commits of HEAD, newest first"`
		Tree      []wsfs.Entry         `json:"tree" jsonschema:"the top-level entries, as workspace_list_directory lists them"`
		Tasks     []contextTask        `json:"tasks" jsonschema:"tasks found (justfile, Makefile, package.json scripts)"`
		Readme    *contextReadme       `json:"readme,omitempty" jsonschema:"the first lines of the top-level README, when there is one"`
		Ports     *workspace.PortBlock `json:"ports,omitempty" jsonschema:"the workspace's own ports for dev servers: count ports from first (also in the environment as CODEHYDRA_PORT, CODEHYDRA_PORTS and PORT)"`
		PortsNote string               `json:"portsNote,omitempty" jsonschema:"why the workspace has no ports, when it has none"`
	}

	contextTask struct {
		Name    string `json:"name"`
		Source  string `json:"source"`
		Command string `json:"command,omitempty"`
	}

	contextReadme struct {
		Path      string `json:"path"`
		Head      string `json:"head" jsonschema:"its first 40 lines"`
		Truncated bool   `json:"truncated,omitempty" jsonschema:"true: the README goes on; read it with workspace_read_file"`
	}
)

func (s *Server) getContext(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, contextOutput, error) {
	ws := callerWorkspace(ctx)
	fsys := s.files(ctx)
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		return nil, contextOutput{}, fail(err)
	}
	ch, err := s.opts.Workspaces.Changes(ctx, ws.Path)
	if err != nil {
		return nil, contextOutput{}, fail(err)
	}
	out := contextOutput{Path: ws.Path, Branch: ws.Branch, Base: st.Base, Ahead: st.Ahead, Behind: st.Behind,
		Changed: nonNil(ch.Changed), Untracked: nonNil(ch.Untracked), Tasks: []contextTask{}, Ports: st.Ports, PortsNote: st.PortsNote}
	if out.Commits, err = fsys.Log(ctx, contextCommits); err != nil {
		return nil, contextOutput{}, fail(err)
	}
	out.Commits = nonNil(out.Commits)
	top, err := fsys.List(ctx, ".", 1)
	if err != nil {
		return nil, contextOutput{}, fail(err)
	}
	out.Tree = top.Entries
	found, err := tasks.Find(ws.Path)
	if err != nil {
		return nil, contextOutput{}, fail(err)
	}
	for _, t := range found {
		out.Tasks = append(out.Tasks, contextTask{Name: t.Name, Source: t.Source, Command: t.Command})
	}
	out.Readme = readmeHead(fsys, top.Entries)
	return nil, out, nil
}

// readmeHead reads the first lines of the top-level README through the
// same confinement as workspace_read_file; a README that cannot be read
// (binary, a symlink out) is left out rather than failing the call.
func readmeHead(fsys *wsfs.FS, top []wsfs.Entry) *contextReadme {
	i := slices.IndexFunc(top, func(e wsfs.Entry) bool {
		return e.Type != "dir" && strings.HasPrefix(strings.ToLower(e.Path), "readme")
	})
	if i < 0 {
		return nil
	}
	page, err := fsys.Read(top[i].Path, 0, 64<<10)
	if err != nil || page.Binary {
		return nil
	}
	lines := strings.SplitAfter(page.Content, "\n")
	r := &contextReadme{Path: top[i].Path}
	if len(lines) > readmeLines {
		lines, r.Truncated = lines[:readmeLines], true
	}
	r.Head = strings.Join(lines, "")
	r.Truncated = r.Truncated || page.NextOffset != nil
	return r
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
