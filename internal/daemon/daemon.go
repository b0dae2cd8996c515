package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"codehydra/gateway"
	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/pullrequest"
	"codehydra/internal/rotate"
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/prepare"
	"codehydra/previews"
	"codehydra/tasks"
	"codehydra/workspace"
	"codehydra/workspace/statuscache"
)

// shutdownTimeout bounds the whole shutdown; stopping agents alone may take
// 3 s each (SIGTERM, then SIGKILL), in parallel.
const shutdownTimeout = 20 * time.Second

// Options are what the command line asks of a run, and the process's
// streams, environment and clock (replaceable in tests).
type Options struct {
	Projects []string // --project paths, absolute
	GUI      bool     // run the tray app (the default command); false for serve
	// UI runs the tray app over the running server's parts until the
	// user quits or ctx ends; ErrNoDisplay runs headless instead. Only
	// the GUI program (codehydra-gui, internal/gui) has one.
	UI func(ctx context.Context, parts UIParts) error

	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Now            func() time.Time
	// Version is the program's, for the log, the MCP server and telemetry.
	Version string
}

// Run runs the app until SIGINT, SIGTERM or ctx ends, and returns the exit
// code.
func Run(ctx context.Context, opts Options) int {
	if opts.GUI && opts.UI == nil {
		// Before the lock and every part: nothing is started for a tray
		// that cannot run.
		fmt.Fprintln(opts.Stderr, "codehydra: this program has no tray app (it is codehydra-gui's)")
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tuneGC(ctx, opts.Getenv)
	s := &server{
		opts: opts,
		pid:  os.Getpid(),
		log:  slog.New(slog.NewTextHandler(opts.Stderr, nil)),
	}
	code := s.run(ctx)
	if s.restart && code == 0 {
		// Only after shutdown has released the lock and the ports.
		if err := reexec(); err != nil {
			fmt.Fprintf(opts.Stderr, "codehydra: %v; start it again by hand\n", err)
			return 1
		}
	}
	return code
}

// server is one run of the app: the parts build makes and wires, the
// steps that start them in the order of docs/DESIGN.md "Shape", and the
// steps that stop them again, in reverse.
type server struct {
	opts Options
	pid  int

	log     *slog.Logger
	logFile *rotate.File

	settings *settings.Store
	lock     *instance.Lock

	// The parts, made by build (build.go) before any of them starts, and
	// never nil after it.
	tel     telemetry
	events  *workspace.Events
	token   *mcp.Token
	gateway *gateway.Gateway
	// questions passes the gateway servers' questions to the tray.
	questions *questions
	sup       *opencode.Supervisor
	prep      *prepare.Preparer
	// runs are the background tasks (dev servers) of every workspace.
	runs *tasks.Runs
	// esc holds children's requests for their parents' agents first.
	esc     *workspace.Escalator
	manager *workspace.Manager
	cache   *statuscache.Cache
	// prs opens pull requests, for the MCP server and the tray.
	prs *pullrequest.Creator
	// previews finds the ports the workspaces' processes listen on.
	previews *previews.Finder
	mcp      *mcp.Server
	// mcpServed receives Serve's result once startMCP started it.
	mcpServed chan error

	// The MCP server's address and access token, for the instance file.
	mcpURL   string
	mcpPort  int
	mcpToken string
	// startedAt is when the instance file was first written; a rewrite
	// (Rotate token) keeps it.
	startedAt time.Time

	// restart asks for a new run of the app after shutdown (set by the
	// settings window's "Restart now").
	restart bool

	// teardown holds what build and start made, undone in reverse by
	// shutdown.
	teardown []step
}

// step is one named startup or shutdown action.
type step struct {
	name string
	fn   func(ctx context.Context) error
}

// onShutdown registers fn to run at shutdown, before everything registered
// earlier.
func (s *server) onShutdown(name string, fn func(ctx context.Context) error) {
	s.teardown = append(s.teardown, step{name, fn})
}

// run starts everything, waits for the UI or a signal, and shuts down.
func (s *server) run(ctx context.Context) int {
	defer s.shutdown()

	settingsErr := s.loadSettings()
	if err := s.takeLock(); errors.Is(err, instance.ErrLocked) {
		s.reportRunningInstance()
		return 0
	} else if err != nil {
		fmt.Fprintf(s.opts.Stderr, "codehydra: %v\n", err)
		return 1
	}
	if err := s.openLog(); err != nil {
		fmt.Fprintf(s.opts.Stderr, "codehydra: cannot write the log (%v); logging to the terminal only\n", err)
	}
	if settingsErr != nil {
		// The error says what was kept: the defaults, or all but one key.
		s.log.Warn("settings file not used as it was", "err", settingsErr)
	}
	s.log.Info("starting", "version", s.opts.Version, "pid", s.pid, "settings", s.settings.Path())
	if dropped := s.guardPATH(); len(dropped) > 0 {
		s.log.Warn("PATH folders that agents may write are not searched for programs", "dropped", dropped)
	}
	if err := s.build(ctx); err != nil {
		fmt.Fprintf(s.opts.Stderr, "codehydra: could not %v\n", err)
		s.log.Error("startup failed", "err", err)
		return 1
	}

	// Every part exists; start them in order. Loading the projects (git
	// over every project, reaping and starting agents) runs in the
	// background, so that neither the MCP server nor the UI waits for it;
	// agents start as their workspaces are discovered.
	for _, st := range []step{
		{"start the user's MCP servers", s.startGateway},
		{"start the MCP server", s.startMCP},
		{"write the OpenCode config", s.writeOpencodeConfig},
		{"write the instance file", s.writeInstanceFile},
		{"start agents", s.startAgents},
		{"keep the system awake while agents work", s.keepAwake},
		{"report gauges", s.observeGauges},
		{"watch projects for outside changes", s.watchProjects},
		{"load projects", s.loadProjects},
	} {
		if err := st.fn(ctx); err != nil {
			if ctx.Err() != nil {
				s.log.Info("stopped during startup", "step", st.name)
				return 0
			}
			fmt.Fprintf(s.opts.Stderr, "codehydra: could not %s: %v\n", st.name, err)
			s.log.Error("startup failed", "step", st.name, "err", err)
			return 1
		}
	}

	if err := s.runUI(ctx); err != nil {
		fmt.Fprintf(s.opts.Stderr, "codehydra: %v\n", err)
		s.log.Error("app failed", "err", err)
		return 1
	}
	return 0
}

// shutdown undoes build and start in reverse: projects, agents, MCP
// server, the user's MCP servers, telemetry, instance file, lock
// (docs/DESIGN.md "Shape"). A failing step is logged and the rest still run.
func (s *server) shutdown() {
	if len(s.teardown) > 0 {
		s.log.Info("shutting down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for i := len(s.teardown) - 1; i >= 0; i-- {
		st := s.teardown[i]
		if err := st.fn(ctx); err != nil {
			s.log.Error("shutdown step failed", "step", st.name, "err", err)
		}
	}
	if len(s.teardown) > 0 {
		s.log.Info("stopped")
	}
	s.teardown = nil
	if s.logFile != nil {
		s.logFile.Close()
	}
}

// loadSettings is step 1a. A corrupt file is reported and moved aside by
// settings.Load; the run goes on with defaults (or, when only opencodeBin
// was a relative path, with every other setting of the file).
func (s *server) loadSettings() error {
	s.settings = settings.NewStore(paths.SettingsFile())
	err := s.settings.Load()
	if err != nil {
		fmt.Fprintf(s.opts.Stderr, "codehydra: %v\n", err)
	}
	return err
}

// runUI is step 7: the tray app, or for serve a wait for SIGINT/SIGTERM.
func (s *server) runUI(ctx context.Context) error {
	if s.opts.GUI {
		return s.runApp(ctx)
	}
	<-ctx.Done()
	s.log.Info("stop requested")
	return nil
}
