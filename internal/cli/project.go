package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"codehydra/mcp"
)

const projectHelp = `Usage:
  codehydra project list [--json]
  codehydra project add PATH
  codehydra project remove PATH

Lists, adds or removes the projects (git repositories) of the running
CodeHydra, through its MCP server. Removing a project deletes no file.

Flags:
  --json   print the list as JSON
  --help   show this help
`

// runProject is `codehydra project add|remove|list`.
func runProject(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("project", projectHelp)
	asJSON := fs.Bool("json", false, "")
	rest, code, ok := parseInterleaved(fs, c, args)
	if !ok {
		return code
	}
	return runSubcommand(fs, c, rest, []subcommand{
		{"list", "", func(string) int { return projectList(ctx, c, *asJSON) }},
		{"add", "PATH", func(path string) int { return projectAdd(ctx, c, fs, path) }},
		{"remove", "PATH", func(path string) int { return projectRemove(ctx, c, fs, path) }},
	})
}

// projectList is `codehydra project list`.
func projectList(ctx context.Context, c *cli, asJSON bool) int {
	var out mcp.ProjectList
	raw, code := callRemote(ctx, c, "", mcp.ToolProjectList, nil, &out)
	if code != 0 {
		return code
	}
	if asJSON {
		return printJSON(c, raw)
	}
	if len(out.Projects) == 0 {
		// On stderr: scripts read stdout as the list, which is empty.
		fmt.Fprintln(c.stderr, "no projects; add one with `codehydra project add PATH`")
	}
	for _, p := range out.Projects {
		fmt.Fprintf(c.stdout, "%s\t%s\n", p.Name, p.Path)
		for _, w := range p.Workspaces {
			fmt.Fprintf(c.stdout, "  %s\t%s\n", w.Name, w.Path)
		}
	}
	return 0
}

// projectAdd is `codehydra project add PATH`.
func projectAdd(ctx context.Context, c *cli, fs *flag.FlagSet, arg string) int {
	path, err := filepath.Abs(arg)
	if err != nil {
		return usageError(fs, c, err)
	}
	var p mcp.ProjectAdded
	if _, code := callRemote(ctx, c, "", mcp.ToolProjectAdd, map[string]any{"path": path}, &p); code != 0 {
		return code
	}
	if p.AlreadyAdded {
		fmt.Fprintf(c.stdout, "project %s (%s) was already added; nothing changed\n", p.Name, p.Path)
		return 0
	}
	fmt.Fprintf(c.stdout, "added project %s (%s)\n", p.Name, p.Path)
	return 0
}

// projectRemove is `codehydra project remove PATH`; it deletes no file.
func projectRemove(ctx context.Context, c *cli, fs *flag.FlagSet, arg string) int {
	path, err := filepath.Abs(arg)
	if err != nil {
		return usageError(fs, c, err)
	}
	if _, code := callRemote(ctx, c, "", mcp.ToolProjectRemove, map[string]any{"path": path}, nil); code != 0 {
		return code
	}
	fmt.Fprintf(c.stdout, "removed project %s (no file was deleted)\n", path)
	return 0
}
