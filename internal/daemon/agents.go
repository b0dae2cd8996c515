package daemon

import (
	"context"
	"fmt"
	"os"

	"codehydra/internal/paths"
	"codehydra/opencode"
	"codehydra/workspace"
)

// One opencode agent per workspace, started and stopped as workspaces
// come and go.

// startAgents follows the manager's events, so that every workspace that
// appears (loaded in the background by loadProjects, created or found
// later) gets an agent once it is prepared (the supervisor bounds how many
// start at once) and every one that goes loses it.
func (s *server) startAgents(ctx context.Context) error {
	s.log.Info("sandbox", "mode", s.settings.Get().Sandbox.Mode, "system", sandboxSupport())
	if bin, ok := s.sup.FindBinary(); ok {
		s.log.Info("opencode found", "path", bin)
	} else {
		fmt.Fprintf(s.opts.Stderr, "codehydra: %s\n", opencode.InstallHint)
		s.log.Warn("opencode not found; workspaces run without agents")
	}
	// The temporary folders of an earlier run's workspaces; none of its
	// processes runs any more (the lock says so).
	if err := os.RemoveAll(paths.WorkspaceTempRoot()); err != nil {
		s.log.Warn("cannot clear the workspaces' temporary folders", "err", err)
	}

	events, unsubscribe := s.events.Subscribe()
	escEvents, escUnsubscribe := s.events.Subscribe()
	followCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done, escDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s.followWorkspaces(followCtx, events)
	}()
	go func() {
		defer close(escDone)
		s.esc.Run(followCtx, escEvents)
	}()
	idleDone := make(chan struct{})
	go func() {
		defer close(idleDone)
		s.sup.HibernateIdle(followCtx)
	}()
	s.onShutdown("stop agents", func(ctx context.Context) error {
		cancel()
		<-done
		<-escDone
		<-idleDone
		unsubscribe()
		escUnsubscribe()
		s.prep.Close()
		return s.sup.StopAll(ctx)
	})
	return nil
}

// reapOrphans stops agents and background tasks that a crashed earlier
// run left behind (it may wait for them to exit, so it runs in the
// background, before any agent of this run starts).
func (s *server) reapOrphans() {
	if n, err := s.sup.ReapOrphans(); err != nil {
		s.log.Warn("reaping orphaned agents", "err", err)
	} else if n > 0 {
		s.log.Info("reaped orphaned agents", "count", n)
	}
	if err := s.runs.Reap(); err != nil {
		s.log.Warn("reaping orphaned background tasks", "err", err)
	}
}

// followWorkspaces starts the agent of every workspace that appears and
// stops the agent (and the MCP servers run for it) of every workspace that
// goes, however it went (a delete stops it first; a worktree removed
// outside the app does not).
func (s *server) followWorkspaces(ctx context.Context, events <-chan workspace.Event) {
	workspace.Follow(ctx, events, func(batch []workspace.Event) {
		for _, e := range batch {
			switch e.Kind {
			case workspace.EventMetadataChanged:
				// The servers the user switched off for it may have changed.
				s.gateway.Rechoose(e.Workspace.Path)
			case workspace.EventWorkspaceAdded:
				s.prep.Added(e.Workspace, e.Created)
			case workspace.EventWorkspaceRemoved:
				s.prep.Removed(e.Workspace.Path)
				if err := s.sup.StopAgent(ctx, e.Workspace.Path); err != nil {
					s.log.Warn("stopping the agent of a removed workspace", "path", e.Workspace.Path, "err", err)
				}
				s.forgetRuns(ctx, e.Workspace.Path)
				s.gateway.ForgetWorkspace(e.Workspace.Path)
				s.gateway.Rechoose(e.Workspace.Path)
				if err := os.RemoveAll(workspaceTemp(e.Workspace.Path)); err != nil {
					s.log.Warn("cannot remove the temporary folder of a removed workspace", "path", e.Workspace.Path, "err", err)
				}
			}
		}
	})
}
