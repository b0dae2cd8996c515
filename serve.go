package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"net"
	"strconv"

	"golang.org/x/time/rate"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
	"codehydra/workspace/statuscache"
)

// shutdownTimeout bounds the whole shutdown; stopping agents alone may take
// 3 s each (SIGTERM, then SIGKILL), in parallel.
const shutdownTimeout = 20 * time.Second

// maxLogSize is the size above which the log is moved to codehydra.log.1 at
// startup.
const maxLogSize = 10 << 20

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
	logFile *os.File

	settings *settings.Store
	lock     *instance.Lock
	manager  *workspace.Manager

	// The MCP server's address and access token, set by startMCP; they go
	// into the instance file. Empty while no MCP server runs.
	mcpURL   string
	mcpPort  int
	mcpToken string

	mcp   *mcp.Server
	token *mcp.Token
	sup   *opencode.Supervisor

	// restart asks for a new run of the app after shutdown (set by the
	// settings window's "Restart now").
	restart bool

	// agentPorts is what the MCP server asks for a workspace's opencode
	// port; startAgents points it at the supervisor.
	agentPorts *agentPorts

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
		s.log.Warn("settings not loaded; using defaults", "err", settingsErr)
	}
	s.log.Info("starting", "version", version, "pid", s.pid, "settings", s.settings.Path())
	s.newManager()

	// Steps 5 and 6 (git over every project, reaping and starting agents)
	// run in the background, so that neither the MCP server nor the UI
	// waits for them; agents start as their workspaces are discovered.
	for _, st := range []step{
		{"start the MCP server", s.startMCP},
		{"write the OpenCode config", s.writeOpencodeConfig},
		{"write the instance file", s.writeInstanceFile},
		{"start agents", s.startAgents},
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
// settings.Load; the run goes on with defaults.
func (s *server) loadSettings() error {
	s.settings = settings.NewStore(paths.SettingsFile())
	err := s.settings.Load()
	if err != nil {
		fmt.Fprintf(s.cli.stderr, "codehydra: %v\n", err)
	}
	return err
}

// takeLock is step 1b. From here on shutdown releases the lock and removes
// the instance file (also one left behind by a crashed instance).
func (s *server) takeLock() error {
	l, err := instance.Acquire(paths.LockFile())
	if err != nil {
		return err
	}
	s.lock = l
	s.onShutdown("release the lock", func(context.Context) error { return l.Release() })
	s.onShutdown("remove the instance file", func(context.Context) error {
		return instance.Remove(paths.InstanceFile())
	})
	return nil
}

// reportRunningInstance tells the user where the instance that holds the
// lock is.
func (s *server) reportRunningInstance() {
	info, err := instance.Read(paths.InstanceFile())
	if err != nil || !instance.Alive(info.PID) {
		fmt.Fprintln(s.cli.stdout, "CodeHydra is already running (it is still starting up; run `codehydra status` in a moment).")
		return
	}
	fmt.Fprintf(s.cli.stdout, "CodeHydra is already running (%s).\n", where(info.PID, info.MCPURL))
}

// where says where an instance is: "pid N, MCP at URL" or "pid N, no MCP
// server".
func where(pid int, mcpURL string) string {
	if mcpURL == "" {
		return fmt.Sprintf("pid %d, no MCP server", pid)
	}
	return fmt.Sprintf("pid %d, MCP at %s", pid, mcpURL)
}

// openLog sends the log to paths.LogFile(), and also to stderr for serve or
// when stderr is a terminal. The token is never logged.
func (s *server) openLog() error {
	var handlers []slog.Handler
	if !s.opts.gui || isTerminal(s.cli.stderr) {
		handlers = append(handlers, slog.NewTextHandler(s.cli.stderr, nil))
	}
	f, err := openLogFile(paths.LogFile())
	if err == nil {
		s.logFile = f
		handlers = append(handlers, slog.NewTextHandler(f, nil))
	}
	s.log = slog.New(slog.NewMultiHandler(handlers...))
	return err
}

// openLogFile opens path for appending (0600 in a 0700 folder), first
// moving a large log to path.1.
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log folder: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newManager builds the workspace manager (cheap: no git yet) so that the
// MCP server can be given it before projects are loaded.
func (s *server) newManager() {
	set := s.settings.Get()
	s.manager = workspace.NewManager(workspace.Options{
		Projects:     set.Projects,
		Store:        s.settings,
		WorktreeRoot: set.WorktreeRoot,
		Logger:       s.log,
	})
}

// startMCP is step 2 (DESIGN.md "Shape"): the access token, then the MCP
// server bound once on 127.0.0.1:<mcpPort> (a taken fixed port falls back to
// a dynamic one, which the instance file then shows).
func (s *server) startMCP(ctx context.Context) error {
	tok, err := mcp.LoadOrCreateToken(paths.TokenFile())
	if err != nil {
		return fmt.Errorf("load the MCP access token: %w", err)
	}
	set := s.settings.Get()
	srv, err := mcp.New(mcp.Options{
		Addr:        net.JoinHostPort("127.0.0.1", strconv.Itoa(set.MCPPort)),
		Token:       tok,
		Workspaces:  s.manager,
		Agents:      s.agentPorts,
		RateLimit:   rate.Limit(set.RateLimit.PerSecond),
		Burst:       set.RateLimit.Burst,
		CallTimeout: set.ToolTimeout(),
		AuditPath:   paths.AuditFile(),
		Logger:      s.log,
		Version:     version,
	})
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx) }()
	s.mcp, s.token = srv, tok
	s.mcpURL, s.mcpPort, s.mcpToken = srv.URL(), srv.Port(), tok.Value()
	s.onShutdown("stop the MCP server", func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		cancel()
		if serr := <-done; err == nil {
			err = serr
		}
		return err
	})
	return nil
}

// rotateToken replaces the MCP access token and rewrites the instance file,
// which the command line reads it from. Agents are restarted by the caller.
func (s *server) rotateToken() error {
	if s.token == nil {
		return errors.New("no MCP server runs")
	}
	if err := s.token.Rotate(); err != nil {
		return err
	}
	s.mcpToken = s.token.Value()
	s.log.Info("MCP access token rotated")
	return s.writeInstanceFile(context.Background())
}

// writeOpencodeConfig is step 3, before any `opencode serve` starts (OpenCode
// does not reconnect to an MCP server that was down when it started).
func (s *server) writeOpencodeConfig(ctx context.Context) error {
	return opencode.WriteConfig(paths.OpencodeConfigFile())
}

// writeInstanceFile is step 4.
func (s *server) writeInstanceFile(ctx context.Context) error {
	info := instance.Info{
		PID:       s.pid,
		MCPURL:    s.mcpURL,
		MCPPort:   s.mcpPort,
		Token:     s.mcpToken,
		StartedAt: s.cli.now().UTC().Truncate(time.Second),
	}
	if err := instance.Write(paths.InstanceFile(), info); err != nil {
		return err
	}
	s.log.Info("instance file written", "path", paths.InstanceFile(), "mcpUrl", s.mcpURL)
	return nil
}

// loadProjects starts step 5 in the background and returns: reap agents a
// crashed earlier run left behind, load the saved projects with their
// workspaces and publish them (the UI shows them, the supervisor starts
// their agents), then add the --project paths, and announce. Shutdown
// stops it before it stops the agents.
func (s *server) loadProjects(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.reapOrphans()
		if err := s.loadAndAddProjects(ctx); err != nil {
			s.log.Info("stopped while loading projects")
			return
		}
		s.announce()
	}()
	s.onShutdown("stop loading projects", func(context.Context) error {
		cancel()
		<-done
		return nil
	})
	return nil
}

// loadAndAddProjects loads the saved projects with their workspaces, then
// adds the --project paths. A project that cannot be added is reported and
// skipped; the app stays useful without it (projects can be added later).
func (s *server) loadAndAddProjects(ctx context.Context) error {
	if err := s.manager.Load(ctx); err != nil {
		if ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(s.cli.stderr, "codehydra: some saved projects could not be loaded: %v\n", err)
		s.log.Warn("loading saved projects", "err", err)
	}
	for _, p := range s.opts.projects {
		if _, err := s.manager.AddProject(ctx, p); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(s.cli.stderr, "codehydra: could not add project %s: %v\n", p, err)
			s.log.Warn("add project failed", "path", p, "err", err)
		}
	}
	return nil
}

// startAgents is step 6: the supervisor, which follows the manager's
// events so that every workspace that appears (loaded in the background by
// loadProjects, created or found later) gets an agent (the supervisor
// bounds how many start at once) and every one that goes loses it.
func (s *server) startAgents(ctx context.Context) error {
	set := s.settings.Get()
	sup := opencode.NewSupervisor(opencode.SupervisorOptions{
		Bin:        set.OpencodeBin,
		BasePort:   set.OpencodeBasePort,
		ConfigPath: paths.OpencodeConfigFile(),
		MCPPort:    func() int { return s.mcpPort },
		MCPToken:   func() string { return s.token.Value() },
		OnChange: func(path string) {
			s.manager.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: workspace.Workspace{Path: path}})
		},
		AgentsDir: paths.AgentsDir(),
		ToolsDir:  paths.ToolsDir(),
		Logger:    s.log,
	})
	if bin, ok := sup.FindBinary(); ok {
		s.log.Info("opencode found", "path", bin)
	} else {
		fmt.Fprintf(s.cli.stderr, "codehydra: %s\n", opencode.InstallHint)
		s.log.Warn("opencode not found; workspaces run without agents")
	}
	s.sup = sup
	s.manager.SetAgents(sup)
	s.agentPorts.set(sup)

	events, unsubscribe := s.manager.Subscribe()
	followCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.followWorkspaces(followCtx, sup, events)
	}()
	s.onShutdown("stop agents", func(ctx context.Context) error {
		cancel()
		<-done
		unsubscribe()
		return sup.StopAll(ctx)
	})
	return nil
}

// reapOrphans stops agents that a crashed earlier run left behind (it may
// wait for them to exit, so it runs in the background, before any agent
// of this run starts).
func (s *server) reapOrphans() {
	if s.sup == nil {
		return
	}
	if n, err := s.sup.ReapOrphans(); err != nil {
		s.log.Warn("reaping orphaned agents", "err", err)
	} else if n > 0 {
		s.log.Info("reaped orphaned agents", "count", n)
	}
}

// followWorkspaces starts the agent of every workspace that appears and
// stops the agent of every workspace that goes, however it went (a delete
// stops it first; a worktree removed outside the app does not).
func (s *server) followWorkspaces(ctx context.Context, sup *opencode.Supervisor, events <-chan workspace.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			switch e.Kind {
			case workspace.EventWorkspaceAdded:
				sup.Start(e.Workspace)
			case workspace.EventWorkspaceRemoved:
				if err := sup.StopAgent(ctx, e.Workspace.Path); err != nil {
					s.log.Warn("stopping the agent of a removed workspace", "path", e.Workspace.Path, "err", err)
				}
			}
		}
	}
}

// watchProjects runs the manager's watch for worktrees added or removed
// outside the app, and the status cache, until shutdown, which stops them
// first.
func (s *server) watchProjects(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	cache := statuscache.New(s.manager, statuscache.Options{Logger: s.log})
	s.manager.SetStatusCache(cache)
	var wg sync.WaitGroup
	wg.Go(func() { s.manager.Run(ctx) })
	wg.Go(func() { cache.Run(ctx) })
	s.onShutdown("stop watching projects", func(context.Context) error {
		cancel()
		wg.Wait()
		return nil
	})
	return nil
}

// announce says the app is up.
func (s *server) announce() {
	n := len(s.manager.Projects())
	s.log.Info("running", "pid", s.pid, "mcpUrl", s.mcpURL, "projects", n)
	noun := "projects"
	if n == 1 {
		noun = "project"
	}
	fmt.Fprintf(s.cli.stdout, "CodeHydra is running (%s, %d %s). Stop it with Ctrl+C.\n", where(s.pid, s.mcpURL), n, noun)
}

// runUI is step 7: the tray app, or for serve a wait for SIGINT/SIGTERM.
func (s *server) runUI(ctx context.Context) error {
	if s.opts.gui {
		return runApp(ctx, s)
	}
	<-ctx.Done()
	s.log.Info("stop requested")
	return nil
}

// agentPorts answers the MCP server's workspace_get_opencode_port. The MCP
// server starts before the agent supervisor exists (DESIGN.md "Shape"), so
// it asks through this, which forwards to the supervisor once set.
type agentPorts struct {
	mu  sync.RWMutex
	src interface{ OpencodePort(path string) (int, bool) }
}

// set points the lookups at src (the supervisor).
func (a *agentPorts) set(src interface{ OpencodePort(path string) (int, bool) }) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.src = src
}

// OpencodePort is the port of the workspace's opencode server; false while
// none runs or no supervisor is set.
func (a *agentPorts) OpencodePort(path string) (int, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.src == nil {
		return 0, false
	}
	return a.src.OpencodePort(path)
}
