package daemon

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"codehydra/gateway"
	"codehydra/internal/netstat"
	"codehydra/internal/paths"
	"codehydra/internal/pullrequest"
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/prepare"
	"codehydra/tasks"
	"codehydra/workspace"
	"codehydra/workspace/statuscache"
)

// build makes every part of the app and wires them, each given what it
// needs when it is made, in one direction: events, token and the MCP
// port first, then the user's MCP servers, the agents and their
// preparation, the workspace manager over them, its status cache, and
// the MCP server over all of them. Nothing runs yet: no goroutine of
// theirs, no process, no request served. What build acquires (the MCP
// port, the gateway's spawner, the telemetry exporters) is released by
// shutdown.
//
// One reference runs the other way, and is read only once the parts run:
// the kernel sandbox's plan for a workspace (confine, sandbox.go) asks
// the manager about its workspaces, and the manager reaches the agents,
// which are confined.
func (s *server) build(ctx context.Context) error {
	set := s.settings.Get()
	if err := s.setUpTelemetry(ctx); err != nil {
		return err
	}
	s.events = workspace.NewEvents(s.log)

	tok, err := mcp.LoadOrCreateToken(paths.TokenFile())
	if err != nil {
		return fmt.Errorf("load the MCP access token: %w", err)
	}
	// The port is bound now, so that agents can be given it; requests
	// wait in the backlog until startMCP serves them. A taken fixed port
	// falls back to a dynamic one, which the instance file then shows.
	bound, err := mcp.Bind(net.JoinHostPort("127.0.0.1", strconv.Itoa(set.MCPPort)))
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	port := bound.Listener.Addr().(*net.TCPAddr).Port

	s.gateway = gateway.New(gateway.Options{
		Servers:      set.MCPServers,
		Log:          s.log.With("part", "gateway"),
		Confine:      s.confine,
		ConfineProbe: s.confineProbe,
		Workspace:    s.workspaceVars,
		Choice:       s.serversChoice,
		SharedCaches: filepath.Join(paths.DataDir(), "mcp-server-caches"),
		Unpinned:     !set.PinTools,
	})
	// Closed after the MCP server has stopped (registered before it), so
	// that no call reaches a stopped server.
	s.onShutdown("stop the MCP servers", func(context.Context) error { return s.gateway.Close() })

	// Background tasks (dev servers) stop after the MCP server has
	// stopped (registered before it), so that no call starts one meanwhile.
	s.runs = tasks.NewRuns(tasks.RunsOptions{Dir: paths.TaskRunsDir(), Listening: netstat.Ports, OnChange: s.agentChanged, Logger: s.log.With("part", "tasks")})
	s.onShutdown("stop background tasks", s.runs.Close)

	s.sup = opencode.NewSupervisor(opencode.SupervisorOptions{
		Bin:        set.OpencodeBin,
		BasePort:   set.OpencodeBasePort,
		ConfigPath: paths.OpencodeConfigFile(),
		MCPPort:    func() int { return port },
		MCPToken:   s.workspaceToken(tok),
		OnChange:   s.agentChanged,
		Confine:    s.confine,
		AgentsDir:  paths.AgentsDir(),
		ToolsDir:   paths.ToolsDir(),
		Logger:     s.log,
		MaxAgents:  set.MaxAgents,
		Tracer:     s.tel.tracerProvider(),
		// Read at each check, so a change in Settings applies at once.
		HibernateAfter: func() time.Duration {
			return time.Duration(s.settings.Get().HibernateAfterMinutes) * time.Minute
		},
		OnHibernate: s.stopRuns,
	})
	s.prep = prepare.New(prepare.Options{
		// The project's setup is read from the settings when the
		// workspace appears, so a change in the Settings window applies
		// to the next workspace (and to a retry).
		Setup: func(projectPath string) (settings.ProjectSetup, bool) {
			return s.settings.Get().SetupFor(projectPath)
		},
		Start:    s.sup.Start,
		Confine:  s.confine,
		OnChange: s.agentChanged,
		Logger:   s.log,
	})
	s.esc = workspace.NewEscalator(workspace.EscalatorOptions{
		Agents: s.sup,
		Tell:   s.sup.Tell,
		// The manager is built below; the escalator asks only once Run
		// follows the workspaces' events.
		ParentOf: func(ctx context.Context, path string) (string, error) {
			md, err := s.manager.Metadata(ctx, path)
			return md[workspace.MetadataCreatedBy], err
		},
		Setting: func() workspace.Escalation {
			e := s.settings.Get().Escalation
			return workspace.Escalation{ParentFirst: e.ParentFirst(), After: e.After()}
		},
		Changed: s.agentChanged,
		Logger:  s.log.With("part", "escalation"),
	})
	agents := preparedAgents{s.sup, s.prep, s.esc, s.runs}

	// git is found once, on the PATH guardPATH left (no folder an agent
	// may write), and run by its path from then on.
	git, err := exec.LookPath("git")
	if err != nil {
		git = ""
	}
	first, last, _ := set.Ports.Bounds()
	s.manager = workspace.NewManager(workspace.Options{
		Projects:     set.Projects,
		Store:        s.settings,
		WorktreeRoot: set.WorktreeRoot,
		Agents:       agents,
		Events:       s.events,
		Logger:       s.log,
		Git:          git,
		// Read at each delete, so a change in Settings applies at once.
		Teardowns: prepare.NewTeardowns(prepare.TeardownOptions{
			Setup:   func(projectPath string) settings.ProjectSetup { return s.settings.Get().ProjectOf(projectPath) },
			Confine: s.confine,
			Logger:  s.log,
		}),
		Ports: workspace.PortsOptions{First: first, Last: last, PerWorkspace: set.Ports.PerWorkspace,
			CursorFile: filepath.Join(paths.DataDir(), "ports-cursor")},
	})
	s.cache = statuscache.New(s.manager, statuscache.Options{Logger: s.log})
	// prCommand and each project's remote are read at each pull request,
	// so a change in the settings applies to the next one.
	s.prs = pullrequest.New(pullrequest.Options{Workspaces: s.manager, Settings: s.settings.Get, Logger: s.log.With("part", "pullrequest")})
	workspaces := statuscache.Over(s.manager, s.cache)
	s.questions = &questions{log: s.log.With("part", "gateway")}
	s.buildPreviews()

	srv, err := mcp.New(mcp.Options{
		Bound:          bound,
		Token:          tok,
		Workspaces:     mcp.LimitCreates(workspaces, mcp.CreateLimit{Count: set.WorkspaceCreateLimit.Count, Per: set.WorkspaceCreateLimit.Window(), Descendants: set.WorkspaceCreateLimit.Descendants}),
		Agents:         agents,
		Prompts:        agents,
		Sessions:       agents,
		Reviews:        agents,
		Answers:        agents,
		Hibernation:    agents,
		Gateway:        s.gateway,
		Elicitor:       s.questions,
		PullRequests:   s.prs,
		Endpoints:      s.previews,
		RateLimit:      rate.Limit(set.RateLimit.PerSecond),
		Burst:          set.RateLimit.Burst,
		CallTimeout:    set.ToolTimeout(),
		TaskTimeout:    set.TaskTimeout(),
		Confine:        s.confine,
		SessionIdle:    set.MCPSessionIdle(),
		MaxSessions:    set.MCPMaxSessions,
		MaxConnections: set.MCPMaxConnections,
		WorkspaceDeny:  set.WorkspaceDeny,
		Subscribe:      s.events.Subscribe,
		AuditPath:      paths.AuditFile(),
		Logger:         s.log,
		Version:        s.opts.Version,
		TracerProvider: s.tel.tracerProvider(),
		MeterProvider:  s.tel.meterProvider(),
		Runs:           s.runs,
		// Read at each call, so a change in Settings applies at once.
		ProjectRun: func(projectPath string) string { return s.settings.Get().ProjectOf(projectPath).Run },
	})
	if err == nil {
		err = srv.SetAuditRotation(set.LogMaxBytes())
	}
	if err != nil {
		bound.Listener.Close()
		return fmt.Errorf("start the MCP server: %w", err)
	}
	s.mcp, s.token = srv, tok
	s.mcpURL, s.mcpPort, s.mcpToken = srv.URL(), srv.Port(), tok.Value()
	s.onShutdown("stop the MCP server", s.stopMCP)
	return nil
}

// stopRuns stops the background tasks of the workspace at path (it is
// hibernated, deleted or gone).
func (s *server) stopRuns(ctx context.Context, path string) {
	if err := s.runs.StopAll(ctx, path); err != nil {
		s.log.Warn("stopping the background tasks of a workspace", "path", path, "err", err)
	}
}

// forgetRuns stops the background tasks of a workspace that went and
// forgets them, their output too: a workspace made later at the same
// path must not see them.
func (s *server) forgetRuns(ctx context.Context, path string) {
	s.stopRuns(ctx, path)
	s.runs.Forget(path)
}

// agentChanged tells the app that the agent of the workspace at path
// changed (its status, or its preparation's).
func (s *server) agentChanged(path string) {
	s.events.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: workspace.Workspace{Path: path}})
}
