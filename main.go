// Command codehydra runs CodeHydra: a tray app (or, with `serve`, a headless
// service) that gives each AI coding agent its own git worktree and
// `opencode serve`, plus one app-wide MCP server through which the agents
// act on their own workspace. This file only dispatches subcommands; the
// startup and shutdown order lives in serve.go.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	_ "codehydra/internal/cleanlocale" // before Fyne initialises
	"codehydra/internal/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// A confined process starts as this binary re-exec'd: it confines
	// itself and execs the real program, before anything else runs.
	sandbox.RunHelperIfAsked()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// cli is what every command gets: its output streams and the process's clock
// and environment, replaceable in tests.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

// commands lists the subcommands in the order usage shows them. project,
// workspace, mcp-config and mcp-stdio (cmd_project.go, cmd_workspace.go,
// cmd_mcpconfig.go, cmd_mcpstdio.go) talk to the running instance through
// cmd_remote.go.
func commands() []command {
	return []command{
		{"serve", "run headless: MCP server and agents, no GUI", runServe},
		{"status", "show the running instance", runStatus},
		{"project", "add, remove or list projects of the running instance", runProject},
		{"workspace", "create, list or delete workspaces of the running instance", runWorkspace},
		{"mcp-config", "print a ready MCP client config", runMCPConfig},
		{"mcp-stdio", "an MCP server on stdio that forwards to the running instance", runMCPStdio},
		{"version", "print the version", runVersion},
	}
}

// run is the whole program behind main, minus os.Exit: it returns the exit
// code (0 ok, 1 failure, 2 bad usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv, now: time.Now}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return runDefault(ctx, c, args)
	}
	name := args[0]
	if name == windowCommand {
		return runWindow(ctx, c, args[1:])
	}
	if name == "help" {
		if len(args) > 1 {
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd.run(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(stderr, "codehydra: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

// usage prints the top-level help.
func usage(w io.Writer) {
	fmt.Fprint(w, `CodeHydra runs several AI coding agents side by side, each in its own git
worktree with its own opencode server, and one MCP server they all share.

Usage:
  codehydra [--project PATH]...   run the app (the tray app; without a display, headless)
  codehydra <command> [flags]

Commands:
`)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, `
Flags:
  --project PATH   add the git repository at PATH as a project (repeatable)
  --help           show this help

Run "codehydra <command> --help" for a command's flags.
`)
}

func runVersion(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet("version", "codehydra version\n\nPrints the version.\n")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	fmt.Fprintf(c.stdout, "codehydra %s\n", version)
	return 0
}
