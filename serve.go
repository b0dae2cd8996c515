package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"codehydra/gateway"
	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/rotate"
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/prepare"
	"codehydra/workspace"
)

// shutdownTimeout bounds the whole shutdown; stopping agents alone may take
// 3 s each (SIGTERM, then SIGKILL), in parallel.
const shutdownTimeout = 20 * time.Second

const serveHelp = `Usage: codehydra serve [--project PATH]...

Runs CodeHydra headless: the MCP server and one opencode agent per workspace,
without the tray app, until SIGINT (Ctrl+C) or SIGTERM. Projects given are
added to the saved project list.

Flags:
  --project PATH   add the git repository at PATH as a project (repeatable)
  --help           show this help
`

// serveOptions are what the command line asks of a run.
type serveOptions struct {
	projects []string // --project paths, absolute
	gui      bool     // run the tray app (the default command); false for serve
}

func runServe(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("serve", serveHelp)
	var projects pathList
	fs.Var(&projects, "project", "")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	return serve(ctx, c, serveOptions{projects: projects})
}

// gcPercent is the GOGC that serve (and the tray app, which runs it) uses
// unless GOGC is set: the MCP server's garbage, most of it the go-sdk's
// decoders, made garbage collection the largest cost of a tool call after
// the system calls. At 300 the collector runs a quarter as often; the live
// heap stays at a few MB, so the idle memory goal still holds (make bench:
// CPU per call and RSS idle).
const gcPercent = 300

func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// runDefault is codehydra without a command: the tray app.
func runDefault(ctx context.Context, c *cli, args []string) int {
	var help strings.Builder
	usage(&help)
	fs := newFlagSet("codehydra", help.String())
	var projects pathList
	fs.Var(&projects, "project", "")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	return serve(ctx, c, serveOptions{projects: projects, gui: true})
}

// serve runs the app until SIGINT, SIGTERM or ctx ends, and returns the exit
// code.
func serve(ctx context.Context, c *cli, opts serveOptions) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tuneGC(c.getenv)
	s := &server{
		cli:        c,
		opts:       opts,
		pid:        os.Getpid(),
		log:        slog.New(slog.NewTextHandler(c.stderr, nil)),
		agentPorts: &agentPorts{},
	}
	code := s.run(ctx)
	if s.restart && code == 0 {
		// Only after shutdown has released the lock and the ports.
		if err := reexec(); err != nil {
			fmt.Fprintf(c.stderr, "codehydra: %v; start it again by hand\n", err)
			return 1
		}
	}
	return code
}

// server is one run of the app: the parts startup builds, in the order of
// DESIGN.md "Shape", and the steps that tear them down again.
type server struct {
	cli  *cli
	opts serveOptions
	pid  int

	log     *slog.Logger
	logFile *rotate.File

	settings *settings.Store
	lock     *instance.Lock
	manager  *workspace.Manager

	// The MCP server's address and access token, set by startMCP; they go
	// into the instance file. Empty while no MCP server runs.
	mcpURL   string
	mcpPort  int
	mcpToken string
	// startedAt is when the instance file was first written; a rewrite
	// (Rotate token) keeps it.
	startedAt time.Time

	mcp   *mcp.Server
	token *mcp.Token
	// gateway runs the user's own MCP servers (serve_gateway.go).
	gateway *gateway.Gateway
	sup     *opencode.Supervisor
	// prep readies a created workspace before sup starts its agent.
	prep *prepare.Preparer

	// restart asks for a new run of the app after shutdown (set by the
	// settings window's "Restart now").
	restart bool

	// agentPorts is what the MCP server asks for a workspace's opencode
	// port; startAgents points it at the supervisor.
	agentPorts *agentPorts

	// tel exports traces and metrics when the environment asks for it
	// (serve_otel.go).
	tel telemetry

	// teardown holds what startup built, undone in reverse by shutdown.
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
		fmt.Fprintf(s.cli.stderr, "codehydra: %v\n", err)
		return 1
	}
	if err := s.openLog(); err != nil {
		fmt.Fprintf(s.cli.stderr, "codehydra: cannot write the log (%v); logging to the terminal only\n", err)
	}
	if settingsErr != nil {
		// The error says what was kept: the defaults, or all but one key.
		s.log.Warn("settings file not used as it was", "err", settingsErr)
	}
	s.log.Info("starting", "version", version, "pid", s.pid, "settings", s.settings.Path())
	if dropped := s.guardPATH(); len(dropped) > 0 {
		s.log.Warn("PATH folders that agents may write are not searched for programs", "dropped", dropped)
	}
	s.newManager()

	// Steps 5 and 6 (git over every project, reaping and starting agents)
	// run in the background, so that neither the MCP server nor the UI
	// waits for them; agents start as their workspaces are discovered.
	for _, st := range []step{
		{"set up telemetry", s.startTelemetry},
		{"set up the user's MCP servers", s.startGateway},
		{"start the MCP server", s.startMCP},
		{"write the OpenCode config", s.writeOpencodeConfig},
		{"write the instance file", s.writeInstanceFile},
		{"start agents", s.startAgents},
		{"report gauges", s.observeGauges},
		{"watch projects for outside changes", s.watchProjects},
		{"load projects", s.loadProjects},
	} {
		if err := st.fn(ctx); err != nil {
			if ctx.Err() != nil {
				s.log.Info("stopped during startup", "step", st.name)
				return 0
			}
			fmt.Fprintf(s.cli.stderr, "codehydra: could not %s: %v\n", st.name, err)
			s.log.Error("startup failed", "step", st.name, "err", err)
			return 1
		}
	}

	if err := s.runUI(ctx); err != nil {
		fmt.Fprintf(s.cli.stderr, "codehydra: %v\n", err)
		s.log.Error("app failed", "err", err)
		return 1
	}
	return 0
}

// shutdown undoes startup in reverse: agents, MCP server, instance file,
// lock (DESIGN.md "Shape"). A failing step is logged and the rest still run.
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
		fmt.Fprintf(s.cli.stderr, "codehydra: %v\n", err)
	}
	return err
}

// runUI is step 7: the tray app, or for serve a wait for SIGINT/SIGTERM.
func (s *server) runUI(ctx context.Context) error {
	if s.opts.gui {
		return s.runApp(ctx)
	}
	<-ctx.Done()
	s.log.Info("stop requested")
	return nil
}
