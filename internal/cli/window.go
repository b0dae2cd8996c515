package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"codehydra/internal/daemon"
	"codehydra/internal/paths"
	"codehydra/internal/tty"
)

// runWindow is the hidden command daemon.WindowCommand: one window
// process of the tray app, run by the GUI program.
func runWindow(ctx context.Context, c *cli, args []string) int {
	if c.gui == nil {
		fmt.Fprintf(c.stderr, "codehydra %s: the windows are %s's, not this program's\n", daemon.WindowCommand, paths.GUI)
		return 2
	}
	if len(args) > 0 || tty.IsTerminal(os.Stdin) || tty.IsTerminal(os.Stdout) {
		fmt.Fprintf(c.stderr, "codehydra-gui %s is started by the CodeHydra app for each of its windows, which it talks to over this command's stdin and stdout; it is not for people to run.\n", daemon.WindowCommand)
		return 2
	}
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	// Stdout carries the bridge: whatever else would print there goes to
	// stderr, which the app logs.
	out, err := bridgeStdout()
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra %s: %v\n", daemon.WindowCommand, err)
		return 1
	}
	os.Stdout = os.Stderr
	if err := c.gui.Window(ctx, os.Stdin, out, log); err != nil {
		fmt.Fprintf(c.stderr, "codehydra %s: %v\n", daemon.WindowCommand, err)
		return 1
	}
	return 0
}
