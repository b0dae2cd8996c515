// Package gui is what the GUI program (cmd/codehydra-gui) adds to the
// command line: the tray app over the running server's parts, and the
// window processes it starts. It joins package app, which links Fyne, to
// package daemon, which does not, so that the core program (codehydra)
// stays without a GUI toolkit (docs/DESIGN.md "Shape").
package gui

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"runtime"

	"codehydra/app"
	"codehydra/gateway"
	"codehydra/internal/cli"
	"codehydra/internal/daemon"
	"codehydra/internal/mcpstdio"
	"codehydra/internal/paths"
)

// Commands is the GUI program's part of the command line.
var Commands = cli.GUI{Tray: Tray, Window: Window}

// Tray runs the tray app over parts until the user quits or ctx ends. It
// runs on the main goroutine, as Fyne requires. Without a display it
// returns an error that is daemon.ErrNoDisplay.
func Tray(ctx context.Context, parts daemon.UIParts) error {
	err := app.Run(ctx, deps(parts))
	if errors.Is(err, app.ErrNoDisplay) {
		return noDisplay{err}
	}
	return err
}

// Window runs one window process, talking to the tray app over in and
// out.
func Window(ctx context.Context, in io.ReadCloser, out io.WriteCloser, log *slog.Logger) error {
	return app.RunWindow(ctx, app.PipeConn(in, out), log)
}

// noDisplay is app.ErrNoDisplay, as daemon knows it.
type noDisplay struct{ error }

func (noDisplay) Is(target error) bool { return target == daemon.ErrNoDisplay }

// deps is what the tray app gets of the running server.
func deps(p daemon.UIParts) app.Deps {
	d := app.Deps{
		Workspaces:          p.Workspaces,
		Landing:             p.Landing,
		Agents:              p.Agents,
		Answers:             p.Answers,
		Hibernation:         p.Agents,
		Prepare:             p.Prepare,
		MCP:                 p.MCP,
		Gateway:             gatewayStatuses{p.Gateway},
		Settings:            p.Settings,
		Questions:           p.Questions,
		Previews:            p.Previews,
		DevServers:          p.DevServers,
		RotateToken:         p.RotateToken,
		MCPConfig:           p.MCPConfig,
		Restart:             p.Restart,
		Logger:              p.Logger,
		Getenv:              p.Getenv,
		DefaultWorktreeRoot: p.DefaultWorktreeRoot,
	}
	// The MCP configs the tray copies run the core program's mcp-stdio
	// (the one this program was started through), else this one's.
	if core, err := paths.Program(paths.Core); err == nil {
		d.MCPConfig = func(client, workspace string) (string, error) {
			return mcpstdio.ClientConfigFor(core, client, workspace)
		}
	}
	if exe, err := selfExecutable(); err == nil {
		d.WindowCommand = []string{exe, daemon.WindowCommand}
	} else {
		p.Logger.Warn("windows open in the app itself", slog.Any("err", err))
	}
	return d
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

// gatewayStatuses shows the gateway's servers to the app in the app's own
// terms (the app does not import the gateway), with the tools withheld
// for a changed definition and their acceptance.
type gatewayStatuses struct{ gw *gateway.Gateway }

func (g gatewayStatuses) Statuses() []app.MCPServerStatus {
	var out []app.MCPServerStatus
	for _, st := range g.gw.Statuses() {
		out = append(out, app.MCPServerStatus{
			Name: st.Name, State: string(st.State), LastError: st.LastError,
			Tools: st.Tools, Calls: st.Calls, Restarts: st.Restarts, Instances: st.Instances, ChangedTools: st.ChangedTools,
		})
	}
	return out
}

func (g gatewayStatuses) ToolChanges(server string) []app.MCPToolChange {
	var out []app.MCPToolChange
	for _, c := range g.gw.ToolChanges(server) {
		out = append(out, app.MCPToolChange{Tool: c.Tool, Old: string(c.Old), New: string(c.New), Hash: c.Hash})
	}
	return out
}

func (g gatewayStatuses) AcceptToolChange(server, tool, hash string) error {
	return g.gw.AcceptToolChange(server, tool, hash)
}
