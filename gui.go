package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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
