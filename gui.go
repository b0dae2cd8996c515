package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"syscall"

	"codehydra/app"
	"codehydra/internal/paths"
)

// runApp is step 7 of the default command: run the tray app until ctx is
// done (SIGINT/SIGTERM) or the user quits, then return so that serve shuts
// everything down. It runs on the main goroutine, as Fyne requires. Without
// a display it says so and runs headless.
func (s *server) runApp(ctx context.Context) error {
	err := app.Run(ctx, s.appDeps())
	if errors.Is(err, app.ErrNoDisplay) {
		fmt.Fprintln(s.cli.stdout, "No display found (neither DISPLAY nor WAYLAND_DISPLAY is set, or DISPLAY's X server is not running): running headless. Stop it with Ctrl+C.")
		s.log.Info("no display; running headless")
		<-ctx.Done()
		return nil
	}
	return err
}

// appDeps is what the tray app gets of the running server: the parts
// startup built and the actions that change them.
func (s *server) appDeps() app.Deps {
	deps := app.Deps{
		Workspaces:          s.manager,
		Settings:            s.settings,
		RotateToken:         s.rotateToken,
		MCPConfig:           stdioClientConfig,
		Restart:             func() { s.restart = true },
		Logger:              s.log,
		Getenv:              s.cli.getenv,
		DefaultWorktreeRoot: paths.ProjectsDir(),
	}
	if exe, err := selfExecutable(); err == nil {
		deps.WindowCommand = []string{exe, windowCommand}
	} else {
		s.log.Warn("windows open in the app itself", slog.Any("err", err))
	}
	// Assigned only when set: a nil pointer in an interface field would
	// not read as "none" to the app.
	if s.sup != nil {
		deps.Agents = preparedAgents{s.sup, s.prep}
		deps.Prepare = s.prep
	}
	if s.mcp != nil {
		deps.MCP = s.mcp
	}
	if s.gateway != nil {
		deps.Settings = gatewaySettings{s.settings, s.gateway}
		deps.Gateway = gatewayStatuses{s.gateway}
	}
	return deps
}

// reexec replaces this process with a new run of the same command line,
// after shutdown, when the user asked for a restart (settings such as the
// MCP port take effect only then).
func reexec() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}

// windowCommand is the hidden command that runs a window process: the
// tray app starts one per window it opens (app.RunWindow) and talks to
// it over its stdin and stdout. It is not in the usage: people do not
// run it.
const windowCommand = "ui-window"

func runWindow(ctx context.Context, c *cli, args []string) int {
	if len(args) > 0 || isTerminal(os.Stdin) || isTerminal(os.Stdout) {
		fmt.Fprintf(c.stderr, "codehydra %s is started by the CodeHydra app for each of its windows, which it talks to over this command's stdin and stdout; it is not for people to run.\n", windowCommand)
		return 2
	}
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	// Stdout carries the bridge: whatever else would print there goes to
	// stderr, which the app logs.
	out, err := bridgeStdout()
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra %s: %v\n", windowCommand, err)
		return 1
	}
	os.Stdout = os.Stderr
	err = app.RunWindow(ctx, app.PipeConn(os.Stdin, out), log)
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra %s: %v\n", windowCommand, err)
		return 1
	}
	return 0
}

// selfExecutable is the program a window process runs: on Linux the
// running binary itself (/proc/self/exe), which stays this very binary
// when an upgrade replaces the file under a running app; elsewhere the
// file it was started from.
func selfExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}
