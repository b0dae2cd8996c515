// Command codehydra runs CodeHydra: a tray app (or, with `serve`, a headless
// service) that gives each AI coding agent its own git worktree and
// `opencode serve`, plus one app-wide MCP server through which the agents
// act on their own workspace. The commands are in internal/cli; the app's
// start-up and shutdown in internal/daemon (docs/DESIGN.md "Shape"). This
// is the core program, which links no GUI toolkit: its default command
// hands over to the GUI program beside it, codehydra-gui
// (cmd/codehydra-gui), which runs the tray app.
package main

import (
	"context"
	"os"

	"codehydra/internal/cli"
	"codehydra/internal/sandbox"
)

// version may be set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// A confined process starts as this binary re-exec'd: it confines
	// itself and execs the real program, before anything else runs.
	sandbox.RunHelperIfAsked()
	cli.Version = version
	os.Exit(cli.Main(context.Background(), os.Args[1:]))
}
