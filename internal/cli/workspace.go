package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"

	"codehydra/mcp"
	"codehydra/workspace"
)

const workspaceHelp = `Usage:
  codehydra workspace list [--project PATH] [--json]
  codehydra workspace create NAME [--project PATH] [--base REF] [--json]
  codehydra workspace delete PATH [--keep-branch | --delete-branch] [--force]

Lists, creates or deletes workspaces (git worktrees, each with its own
agent) of the running CodeHydra, through its MCP server. create makes branch
NAME from REF (default: the project's default branch) in the project at PATH
(default: the current folder); a branch NAME that exists already is
reused as it is, with its metadata and recorded base (--base does not
apply to it, and the output says so). delete stops the workspace's agent, removes
its worktree (uncommitted changes are lost) and, unless --keep-branch, its
branch if CodeHydra created it: a branch that existed before the workspace
is kept (the log says so) unless --delete-branch. First the project's
teardown command runs, if the settings give one: when it fails, nothing is
deleted and the command says why, unless --force. The delete waits for the
teardown, then says it is done (or, past a minute, goes on in the
background).

Flags:
  --project PATH   the project (create: default the current folder;
                   list: default every project)
  --base REF       branch or commit the new workspace starts from
  --keep-branch    keep the branch when deleting
  --delete-branch  delete the branch even if it existed before the workspace
  --force          delete even when the project's teardown fails
  --json           print the result as JSON
  --help           show this help
`

// workspaceFlags are the flags of `codehydra workspace`; each subcommand
// uses those its usage names.
type workspaceFlags struct {
	project      string
	base         string
	keepBranch   bool
	deleteBranch bool
	force        bool
	asJSON       bool
}

// runWorkspace is `codehydra workspace create|list|delete`.
func runWorkspace(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("workspace", workspaceHelp)
	var f workspaceFlags
	fs.StringVar(&f.project, "project", "", "")
	fs.StringVar(&f.base, "base", "", "")
	fs.BoolVar(&f.keepBranch, "keep-branch", false, "")
	fs.BoolVar(&f.deleteBranch, "delete-branch", false, "")
	fs.BoolVar(&f.force, "force", false, "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	rest, code, ok := parseInterleaved(fs, c, args)
	if !ok {
		return code
	}
	return runSubcommand(fs, c, rest, []subcommand{
		{"list", "", func(string) int { return workspaceList(ctx, c, f) }},
		{"create", "NAME", func(name string) int { return workspaceCreate(ctx, c, fs, f, name) }},
		{"delete", "PATH", func(path string) int { return workspaceDelete(ctx, c, fs, f, path) }},
	})
}

// workspaceList is `codehydra workspace list`: the workspaces of every
// project, or of --project's.
func workspaceList(ctx context.Context, c *cli, f workspaceFlags) int {
	var out mcp.ProjectList
	if _, code := callRemote(ctx, c, "", mcp.ToolProjectList, nil, &out); code != 0 {
		return code
	}
	list := []workspace.Workspace{} // --json prints [] for none
	for _, p := range out.Projects {
		if f.project != "" {
			want, err := absPath(f.project)
			if err != nil || !samePath(want, p.Path) {
				continue
			}
		}
		list = append(list, p.Workspaces...)
	}
	if f.asJSON {
		data, err := json.Marshal(list)
		if err != nil {
			fmt.Fprintf(c.stderr, "error: %v\n", err)
			return 1
		}
		return printJSON(c, data)
	}
	if len(list) == 0 {
		// On stderr: scripts read stdout as the list, which is empty.
		fmt.Fprintln(c.stderr, "no workspaces; create one with `codehydra workspace create NAME --project PATH`")
	}
	for _, w := range list {
		fmt.Fprintf(c.stdout, "%s\t%s\n", w.Name, w.Path)
	}
	return 0
}

// workspaceCreate is `codehydra workspace create NAME`.
func workspaceCreate(ctx context.Context, c *cli, fs *flag.FlagSet, f workspaceFlags, name string) int {
	project, err := absPath(f.project)
	if err != nil {
		return usageError(fs, c, err)
	}
	args := map[string]any{"projectPath": project, "name": name}
	if f.base != "" {
		args["base"] = f.base
	}
	var w workspace.Workspace
	raw, code := callRemote(ctx, c, "", mcp.ToolCreate, args, &w)
	if code != 0 {
		return code
	}
	if f.asJSON {
		return printJSON(c, raw)
	}
	fmt.Fprintf(c.stdout, "created workspace %s at %s\n", w.Name, w.Path)
	if w.Note != "" {
		// A reused branch keeps its own commits and base, whatever --base said.
		fmt.Fprintf(c.stdout, "note: %s\n", w.Note)
	}
	return 0
}

// workspaceDelete is `codehydra workspace delete PATH`. The running
// instance answers once the workspace is deleted, or when its teardown
// takes long, while the delete goes on.
func workspaceDelete(ctx context.Context, c *cli, fs *flag.FlagSet, f workspaceFlags, arg string) int {
	path, err := filepath.Abs(arg)
	if err != nil {
		return usageError(fs, c, err)
	}
	var out struct {
		Deleted bool   `json:"deleted"`
		Note    string `json:"note"`
	}
	if _, code := callRemote(ctx, c, path, mcp.ToolDelete, map[string]any{"keepBranch": f.keepBranch, "deleteBranch": f.deleteBranch, "force": f.force}, &out); code != 0 {
		return code
	}
	if out.Deleted {
		fmt.Fprintf(c.stdout, "deleted workspace %s\n", path)
		return 0
	}
	fmt.Fprintf(c.stdout, "deleting workspace %s (it continues in the background)\n", path)
	if out.Note != "" {
		fmt.Fprintf(c.stdout, "note: %s\n", out.Note)
	}
	return 0
}
