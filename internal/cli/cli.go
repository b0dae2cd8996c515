// Package cli is CodeHydra's command line: the table of commands, their
// flags and help, and the commands that talk to the running instance
// (project, workspace, mcp-config, mcp-stdio and status). serve and the
// default command hand over to package daemon, which builds and runs the
// app; the hidden ui-window command runs one window process of the tray
// app.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"codehydra/internal/daemon"
)

// Version is the program's version, which main sets.
var Version = "0.1.0-dev"

// Main runs the command line args with the process's own streams,
// environment and clock, and returns the exit code. It is the core
// program's (codehydra): its default command starts the GUI program
// beside it (gui.go).
func Main(ctx context.Context, args []string) int {
	return Run(ctx, args, os.Stdout, os.Stderr)
}

// GUI is what the GUI program (codehydra-gui) adds to the command line:
// the tray app and its window processes, from internal/gui. The core
// program has none, so that it links no GUI toolkit.
type GUI struct {
	// Tray runs the tray app over the running server (daemon.Options.UI).
	Tray func(ctx context.Context, parts daemon.UIParts) error
	// Window runs one window process, talking to the tray app over in
	// and out (the hidden command daemon.WindowCommand).
	Window func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, log *slog.Logger) error
}

// MainGUI is Main for the GUI program: its default command runs the
// tray app in this process.
func MainGUI(ctx context.Context, args []string, gui GUI) int {
	return run(ctx, newCLI(os.Stdout, os.Stderr, &gui), args)
}

// cli is what every command gets: its output streams and the process's clock
// and environment, replaceable in tests.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// gui is the GUI program's tray app and windows; nil in the core
	// program.
	gui *GUI
}

func newCLI(stdout, stderr io.Writer, gui *GUI) *cli {
	return &cli{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, now: time.Now, gui: gui}
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

// commands lists the subcommands in the order usage shows them. project,
// workspace, mcp-config and mcp-stdio (project.go, workspace.go,
// mcpconfig.go, mcpstdio.go) talk to the running instance through
// remote.go.
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

// Run is the whole core program behind main, minus os.Exit: it returns the
// exit code (0 ok, 1 failure, 2 bad usage).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, newCLI(stdout, stderr, nil), args)
}

func run(ctx context.Context, c *cli, args []string) int {
	stdout, stderr := c.stdout, c.stderr
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return runDefault(ctx, c, args)
	}
	name := args[0]
	if name == daemon.WindowCommand {
		return runWindow(ctx, c, args[1:])
	}
	if name == "help" {
		if len(args) > 1 {
			return run(ctx, c, []string{args[1], "--help"})
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
	fmt.Fprintf(c.stdout, "codehydra %s\n", Version)
	return 0
}
