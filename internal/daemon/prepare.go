package daemon

import (
	"context"
	"errors"

	"codehydra/opencode"
	"codehydra/prepare"
	"codehydra/tasks"
	"codehydra/workspace"
)

// Readying a created workspace before its agent starts (issue 13, point 6):
// the copy and setup of the user's settings (projectSetup) run first, and
// the agent starts only once they succeeded or the user chose to start it
// anyway.

// preparedAgents is the supervisor as the rest of the app sees it: while a
// workspace is being prepared, or its setup failed, its agent status says
// so (workspace_get_status and the tray show why no agent runs).
type preparedAgents struct {
	*opencode.Supervisor
	prep *prepare.Preparer
	// esc marks the requests held for a parent's agent (escalation
	// parent-first).
	esc *workspace.Escalator
	// runs are the workspaces' background tasks, which go with the agent
	// when a workspace is deleted.
	runs *tasks.Runs
}

// AgentStatus is the supervisor's, with the escalation's marks, or the
// preparation's while the agent waits for it.
func (a preparedAgents) AgentStatus(path string) workspace.AgentStatus {
	st, ok := a.prep.State(path)
	switch {
	case !ok || st.Phase == prepare.PhaseDone:
		return a.esc.Mark(path, a.Supervisor.AgentStatus(path))
	case st.Phase == prepare.PhaseFailed:
		return workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateFailed, Detail: st.Detail()}
	}
	return workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateStarting, Detail: st.Detail()}
}

// Restart refuses a workspace whose setup failed: restarting would start
// the agent without the user's choice between a retry and starting anyway.
func (a preparedAgents) Restart(path string) error {
	if st, ok := a.prep.State(path); ok && st.Phase != prepare.PhaseDone {
		return errors.New(st.Detail())
	}
	return a.Supervisor.Restart(path)
}

// Wake refuses a workspace still being prepared, or whose setup failed,
// as Restart does.
func (a preparedAgents) Wake(ctx context.Context, path string) error {
	if st, ok := a.prep.State(path); ok && st.Phase != prepare.PhaseDone {
		return workspace.Errorf(workspace.CodeConflict, "%s", st.Detail())
	}
	return a.Supervisor.Wake(ctx, path)
}

// StopAgent stops the workspace's agent, then its background tasks: the
// first step of a delete (and of a project's removal), before the
// worktree goes and the teardown runs. The agent goes first, so that it
// cannot start a task after its tasks were stopped.
func (a preparedAgents) StopAgent(ctx context.Context, path string) error {
	agentErr := a.Supervisor.StopAgent(ctx, path)
	return errors.Join(agentErr, a.runs.StopAll(ctx, path))
}
