package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"codehydra/internal/paths"
	"codehydra/opencode"
	"codehydra/workspace"
)

// Step 6 of a run: one opencode agent per workspace, started and stopped
// as workspaces come and go.

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
		MCPToken:   s.workspaceToken,
		OnChange: func(path string) {
			s.manager.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: workspace.Workspace{Path: path}})
		},
		Confine:   s.confine,
		AgentsDir: paths.AgentsDir(),
		ToolsDir:  paths.ToolsDir(),
		Logger:    s.log,
		MaxAgents: set.MaxAgents,
		Tracer:    s.tel.tracerProvider(),
	})
	s.log.Info("sandbox", "mode", set.Sandbox.Mode, "system", sandboxSupport())
	if bin, ok := sup.FindBinary(); ok {
		s.log.Info("opencode found", "path", bin)
	} else {
		fmt.Fprintf(s.cli.stderr, "codehydra: %s\n", opencode.InstallHint)
		s.log.Warn("opencode not found; workspaces run without agents")
	}
	// The temporary folders of an earlier run's workspaces; none of its
	// processes runs any more (the lock says so).
	if err := os.RemoveAll(paths.WorkspaceTempRoot()); err != nil {
		s.log.Warn("cannot clear the workspaces' temporary folders", "err", err)
	}
	s.sup = sup
	s.prep = s.newPreparer(sup)
	s.manager.SetAgents(preparedAgents{sup, s.prep})
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
		s.prep.Close()
		return sup.StopAll(ctx)
	})
	return nil
}

// workspaceToken is the MCP token the agent of the workspace at ws gets.
// A worktree whose git registration cannot be read gets none: its agent
// runs, but the MCP server refuses it, and the log says why.
func (s *server) workspaceToken(ws string) string {
	tok, err := s.token.ForWorkspace(ws)
	if err != nil {
		s.log.Warn("the agent gets no MCP token", "path", ws, "err", err)
		return ""
	}
	return tok
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
// stops the agent (and the MCP servers run for it) of every workspace that
// goes, however it went (a delete stops it first; a worktree removed
// outside the app does not).
func (s *server) followWorkspaces(ctx context.Context, sup *opencode.Supervisor, events <-chan workspace.Event) {
	workspace.Follow(ctx, events, func(batch []workspace.Event) {
		for _, e := range batch {
			switch e.Kind {
			case workspace.EventWorkspaceAdded:
				s.prep.Added(e.Workspace, e.Created)
			case workspace.EventWorkspaceRemoved:
				s.prep.Removed(e.Workspace.Path)
				if err := sup.StopAgent(ctx, e.Workspace.Path); err != nil {
					s.log.Warn("stopping the agent of a removed workspace", "path", e.Workspace.Path, "err", err)
				}
				if s.gateway != nil {
					s.gateway.ForgetWorkspace(e.Workspace.Path)
				}
				if err := os.RemoveAll(workspaceTemp(e.Workspace.Path)); err != nil {
					s.log.Warn("cannot remove the temporary folder of a removed workspace", "path", e.Workspace.Path, "err", err)
				}
			}
		}
	})
}

// agentPorts answers the MCP server's workspace_get_opencode_port and
// takes workspace_create's first prompts. The MCP server starts before the
// agent supervisor exists (DESIGN.md "Shape"), so it asks through this,
// which forwards to the supervisor once set.
type agentPorts struct {
	mu  sync.RWMutex
	src agentSource
}

// agentSource is what agentPorts forwards to: the supervisor.
type agentSource interface {
	OpencodePort(path string) (int, bool)
	RecentModel(ctx context.Context, path string) string
	QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error)
}

// set points the lookups at src (the supervisor).
func (a *agentPorts) set(src agentSource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.src = src
}

func (a *agentPorts) source() agentSource {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.src
}

// OpencodePort is the port of the workspace's opencode server; false while
// none runs or no supervisor is set.
func (a *agentPorts) OpencodePort(path string) (int, bool) {
	src := a.source()
	if src == nil {
		return 0, false
	}
	return src.OpencodePort(path)
}

// RecentModel is the model of the last user message the workspace's agent
// got; "" while no supervisor is set.
func (a *agentPorts) RecentModel(ctx context.Context, path string) string {
	src := a.source()
	if src == nil {
		return ""
	}
	return src.RecentModel(ctx, path)
}

// QueuePrompt hands a first prompt to the supervisor; without one (agents
// not set up yet) the prompt is refused.
func (a *agentPorts) QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	src := a.source()
	if src == nil {
		return workspace.PromptDelivery{}, errors.New("the agents are not set up yet; the prompt was not kept")
	}
	return src.QueuePrompt(path, p)
}
