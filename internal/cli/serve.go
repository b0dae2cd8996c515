package cli

import (
	"context"
	"strings"

	"codehydra/internal/daemon"
)

const serveHelp = `Usage: codehydra serve [--project PATH]...

Runs CodeHydra headless: the MCP server and one opencode agent per workspace,
without the tray app, until SIGINT (Ctrl+C) or SIGTERM. Projects given are
added to the saved project list.

Flags:
  --project PATH   add the git repository at PATH as a project (repeatable)
  --help           show this help
`

func runServe(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("serve", serveHelp)
	var projects pathList
	fs.Var(&projects, "project", "")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	return serve(ctx, c, projects, false)
}

// runDefault is codehydra without a command: the tray app. The core
// program hands the command line over to the GUI program beside it
// (startGUI), which runs it in its own process.
func runDefault(ctx context.Context, c *cli, args []string) int {
	var help strings.Builder
	usage(&help)
	fs := newFlagSet("codehydra", help.String())
	var projects pathList
	fs.Var(&projects, "project", "")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	if c.gui == nil {
		return startGUI(c, args)
	}
	return serve(ctx, c, projects, true)
}

// serve hands the run over to the daemon: the tray app when gui is set,
// else headless.
func serve(ctx context.Context, c *cli, projects []string, gui bool) int {
	return daemon.Run(ctx, daemon.Options{
		Projects: projects,
		GUI:      gui,
		Stdout:   c.stdout,
		Stderr:   c.stderr,
		Getenv:   c.getenv,
		Now:      c.now,
		Version:  Version,
		UI:       c.tray(),
	})
}

// tray is the GUI program's tray app, or nil.
func (c *cli) tray() func(context.Context, daemon.UIParts) error {
	if c.gui == nil {
		return nil
	}
	return c.gui.Tray
}
