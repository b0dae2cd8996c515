package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"syscall"

	"codehydra/app"
	"codehydra/internal/mcpstdio"
	"codehydra/internal/paths"
	"codehydra/internal/pullrequest"
	"codehydra/workspace"
	"codehydra/workspace/statuscache"
)

// runApp is the last step of the default command: run the tray app until ctx is
// done (SIGINT/SIGTERM) or the user quits, then return so that serve shuts
// everything down. It runs on the main goroutine, as Fyne requires. Without
// a display it says so and runs headless.
func (s *server) runApp(ctx context.Context) error {
	err := app.Run(ctx, s.appDeps())
	if errors.Is(err, app.ErrNoDisplay) {
		fmt.Fprintf(s.opts.Stdout, "No display found (%v): running headless. Stop it with Ctrl+C.\n", err)
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
		Workspaces:          statuscache.Over(s.manager, s.cache),
		Landing:             landing{statuscache.Over(s.manager, s.cache), s.sup, s.prs},
		Agents:              preparedAgents{s.sup, s.prep, s.esc, s.runs},
		Answers:             s.sup,
		Hibernation:         preparedAgents{s.sup, s.prep, s.esc, s.runs},
		Prepare:             s.prep,
		MCP:                 s.mcp,
		Gateway:             gatewayStatuses{s.gateway},
		Settings:            gatewaySettings{s.settings, s.gateway},
		Questions:           s.questions,
		Previews:            s.previews,
		DevServers:          devServers{s.settings, s.manager, s.runs, s.confine},
		RotateToken:         s.rotateToken,
		MCPConfig:           mcpstdio.ClientConfig,
		Restart:             func() { s.restart = true },
		Logger:              s.log,
		Getenv:              s.opts.Getenv,
		DefaultWorktreeRoot: paths.ProjectsDir(),
	}
	if exe, err := selfExecutable(); err == nil {
		deps.WindowCommand = []string{exe, WindowCommand}
	} else {
		s.log.Warn("windows open in the app itself", slog.Any("err", err))
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

// WindowCommand is the hidden command that runs a window process: the
// tray app starts one per window it opens (app.RunWindow) and talks to
// it over its stdin and stdout. It is not in the usage: people do not
// run it.
const WindowCommand = "ui-window"

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

// landing is what the tray's review, merge, update and pull request use:
// the manager's git work, the supervisor's reviews and the pull request
// creator, all for the user.
type landing struct {
	statuscache.Workspaces
	reviews interface {
		SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error)
		Reviews(path string) []workspace.ReviewDelivery
	}
	prs *pullrequest.Creator
}

func (l landing) SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error) {
	r.From = workspace.ReviewFromUser
	return l.reviews.SendReview(path, r)
}

func (l landing) Reviews(path string) []workspace.ReviewDelivery { return l.reviews.Reviews(path) }

func (l landing) CreatePullRequest(ctx context.Context, wsPath string, o workspace.PullRequestOptions) (workspace.PullRequest, error) {
	return l.prs.Create(ctx, wsPath, o)
}
