package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"codehydra/gateway"
	"codehydra/internal/mcpstdio"
	"codehydra/internal/paths"
	"codehydra/internal/pullrequest"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/prepare"
	"codehydra/previews"
	"codehydra/workspace"
	"codehydra/workspace/statuscache"
)

// ErrNoDisplay is what Options.UI returns when there is no display to
// show the tray app on: the run then goes on headless.
var ErrNoDisplay = errors.New("no display")

// UIParts is what the tray app gets of the running server: the parts
// startup built and the actions that change them. The GUI program
// (internal/gui) hands them to the app; this package does not import
// the app, so that the core program links no GUI (docs/DESIGN.md
// "Shape"). Fields whose types are this package's own adapters are
// typed by the app's interfaces where the GUI program assigns them.
type UIParts struct {
	Workspaces  statuscache.Workspaces
	Landing     landing
	Agents      preparedAgents
	Answers     *opencode.Supervisor
	Prepare     *prepare.Preparer
	MCP         *mcp.Server
	Gateway     *gateway.Gateway
	Settings    gatewaySettings
	Questions   *questions
	Previews    *previews.Finder
	DevServers  devServers
	RotateToken func() error
	// MCPConfig returns a ready MCP client config (mcpstdio.ClientConfig).
	MCPConfig func(client, workspacePath string) (string, error)
	// Restart asks for the app to start again once it has shut down.
	Restart func()
	Logger  *slog.Logger
	Getenv  func(string) string
	// DefaultWorktreeRoot is paths.ProjectsDir().
	DefaultWorktreeRoot string
}

// runApp is the last step of the default command: run the tray app until ctx is
// done (SIGINT/SIGTERM) or the user quits, then return so that serve shuts
// everything down. It runs on the main goroutine, as Fyne requires. Without
// a display it says so and runs headless.
func (s *server) runApp(ctx context.Context) error {
	err := s.opts.UI(ctx, s.uiParts())
	if errors.Is(err, ErrNoDisplay) {
		fmt.Fprintf(s.opts.Stdout, "No display found (%v): running headless. Stop it with Ctrl+C.\n", err)
		s.log.Info("no display; running headless")
		<-ctx.Done()
		return nil
	}
	return err
}

// uiParts is what the tray app gets of the running server.
func (s *server) uiParts() UIParts {
	return UIParts{
		Workspaces:          statuscache.Over(s.manager, s.cache),
		Landing:             landing{statuscache.Over(s.manager, s.cache), s.sup, s.prs},
		Agents:              preparedAgents{s.sup, s.prep, s.esc, s.runs},
		Answers:             s.sup,
		Prepare:             s.prep,
		MCP:                 s.mcp,
		Gateway:             s.gateway,
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
