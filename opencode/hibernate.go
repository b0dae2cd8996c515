package opencode

// Hibernation (docs/DESIGN.md "Hibernation"): a workspace's agent is
// stopped to free its memory while everything else of the workspace stays
// (worktree, branch, metadata, the prompts waiting for it), and started
// again when something needs it. A hibernated agent holds no place of
// MaxAgents. The workspace domain records it in the worktree's git admin
// folder (workspace.MarkHibernated), so that Start keeps it hibernated
// after a restart of CodeHydra.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"codehydra/workspace"
)

// Hibernate stops the agent of the workspace at path, waits until its
// processes are gone and records it hibernated. A running turn ends with
// it. Hibernating a hibernated agent is not an error.
func (s *Supervisor) Hibernate(ctx context.Context, path string) error {
	return s.hibernate(ctx, path, 0)
}

// hibernate is Hibernate; with idleFor above 0 only an agent idle for
// that long (idleLocked), decided again under the lock at the moment it is
// hibernated: a turn or a prompt that came meanwhile keeps it running.
func (s *Supervisor) hibernate(ctx context.Context, path string, idleFor time.Duration) error {
	key := filepath.Clean(path)
	s.mu.Lock()
	a, err := s.hibernatableLocked(key, path)
	if a != nil && idleFor > 0 && !s.idleLocked(key, a, idleFor) {
		a = nil
	}
	s.mu.Unlock()
	if a == nil {
		return err
	}
	since := s.opts.Now()
	if err := workspace.MarkHibernated(a.ws.Path, since); err != nil {
		return fmt.Errorf("hibernate the agent of %s: %w", path, err)
	}
	s.mu.Lock()
	// It may have been stopped, woken or become busy while the record was
	// written.
	if a, err = s.hibernatableLocked(key, path); a == nil || idleFor > 0 && !s.idleLocked(key, a, idleFor) {
		hibernated := a == nil && err == nil
		s.mu.Unlock()
		if !hibernated {
			_ = workspace.UnmarkHibernated(path)
		}
		return err
	}
	s.hibernatedLocked(key, a.ws, since, a.out, a.done)
	s.mu.Unlock()
	a.cancel()
	select {
	case <-a.done:
	case <-ctx.Done():
		return fmt.Errorf("hibernate the agent of %s: wait for it to stop: %w", path, ctx.Err())
	}
	s.log.Info("agent hibernated", slog.String("workspace", a.ws.Path))
	if s.opts.OnHibernate != nil {
		s.opts.OnHibernate(ctx, a.ws.Path)
	}
	s.opts.OnChange(a.ws.Path)
	return nil
}

// hibernatableLocked is the agent of key to hibernate; nil with no error
// when it is hibernated already.
func (s *Supervisor) hibernatableLocked(key, path string) (*agent, error) {
	a := s.agents[key]
	switch {
	case s.closed:
		return nil, errors.New("hibernate the agent: the supervisor is stopped")
	case a == nil:
		return nil, workspace.Errorf(workspace.CodeConflict, "the workspace %s has no agent to hibernate", path)
	case a.state == workspace.AgentStateHibernated:
		return nil, nil
	}
	return a, nil
}

// hibernatedLocked records ws's agent as hibernated since since: a
// placeholder out of the queue for MaxAgents. Its done is stopped, that
// of the agent it replaces (nil: none), which closes once that agent's
// processes are gone and its place of MaxAgents is free: Wake waits for
// it, so that no second opencode runs in the worktree.
func (s *Supervisor) hibernatedLocked(key string, ws workspace.Workspace, since time.Time, out *lineRing, stopped chan struct{}) {
	done := stopped
	if done == nil {
		done = make(chan struct{})
		close(done)
	}
	detail := "hibernated: started again when something needs it (workspace_wake, a prompt, its port)"
	if !since.IsZero() {
		detail = fmt.Sprintf("hibernated since %s UTC: started again when something needs it (workspace_wake, a prompt, its port)",
			since.UTC().Format("2006-01-02 15:04"))
	}
	if out == nil {
		out = newLineRing(s.opts.OutputLines)
	}
	delete(s.waiting, key)
	s.agents[key] = &agent{
		ws:      ws,
		cancel:  func() {},
		done:    done,
		restart: make(chan struct{}, 1),
		state:   workspace.AgentStateHibernated,
		detail:  detail,
		out:     out,
		usage:   s.lastUsageLocked(key),
	}
	s.notifyLocked()
}

// Hibernated reports whether the agent of the workspace at path is
// hibernated.
func (s *Supervisor) Hibernated(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	return a != nil && a.state == workspace.AgentStateHibernated
}

// Wake starts the hibernated agent of the workspace at path and waits
// until it is ready; for an agent that is not hibernated it only waits.
// It is what everything that needs the agent calls first: an agent that
// is ready answers at once. It fails when the agent does not become ready
// (it failed, it has none, it was stopped or hibernated meanwhile) or ctx
// ends first.
func (s *Supervisor) Wake(ctx context.Context, path string) error {
	key := filepath.Clean(path)
	if _, err := s.wakeStart(ctx, key, path); err != nil {
		return err
	}
	return s.waitUntilReady(ctx, key, path)
}

// wakeStart starts the agent of key if it is hibernated (woke), without
// waiting for it to be ready; only, while a Hibernate still stops the
// agent before, for that one to be gone (or ctx to end).
func (s *Supervisor) wakeStart(ctx context.Context, key, path string) (woke bool, err error) {
	s.mu.Lock()
	a := s.agents[key]
	hibernated := a != nil && a.state == workspace.AgentStateHibernated
	s.mu.Unlock()
	if !hibernated {
		return false, nil
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return false, workspace.Errorf(workspace.CodeTimeout, "wake the agent of %s: it is still being hibernated: %v", path, ctx.Err())
	}
	if err := workspace.UnmarkHibernated(a.ws.Path); err != nil {
		return false, fmt.Errorf("wake the agent of %s: %w", path, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, errors.New("wake the agent: the supervisor is stopped")
	}
	if s.agents[key] != a {
		s.mu.Unlock()
		return false, nil // woken or stopped meanwhile
	}
	s.startLocked(key, a.ws)
	s.mu.Unlock()
	s.log.Info("agent woken", slog.String("workspace", a.ws.Path))
	s.opts.OnChange(a.ws.Path)
	return true, nil
}

// waitUntilReady waits until the agent of key is ready.
func (s *Supervisor) waitUntilReady(ctx context.Context, key, path string) error {
	for {
		s.mu.Lock()
		a, changed := s.agents[key], s.changed
		var st workspace.AgentStatus
		if a != nil {
			st = s.statusLocked(a)
		}
		s.mu.Unlock()
		switch {
		case a == nil:
			return workspace.Errorf(workspace.CodeConflict, "the workspace %s has no agent", path)
		case st.State == workspace.AgentStateReady:
			return nil
		case st.State == workspace.AgentStateHibernated:
			return workspace.Errorf(workspace.CodeConflict, "the agent of %s was hibernated again before it was ready", path)
		case st.State != workspace.AgentStateStarting:
			why := st.Detail
			if why == "" {
				why = string(st.State)
			}
			return workspace.Errorf(workspace.CodeConflict, "the agent of %s is not ready: %s", path, why)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return workspace.Errorf(workspace.CodeTimeout, "the agent of %s was not ready in time (it is still starting): %v", path, ctx.Err())
		}
	}
}

// notifyLocked wakes those waiting for a change of any agent
// (waitUntilReady). Call it with s.mu held.
func (s *Supervisor) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// HibernateIdle hibernates, every IdleCheck until ctx ends, the agents
// that have been ready and idle (no session busy, retrying or waiting for
// an answer, no prompt waiting to go out) for HibernateAfter.
func (s *Supervisor) HibernateIdle(ctx context.Context) {
	t := time.NewTicker(s.opts.IdleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if after := s.opts.HibernateAfter(); after > 0 {
			s.hibernateIdle(ctx, after)
		}
	}
}

// hibernateIdle hibernates the agents idle for after or longer.
func (s *Supervisor) hibernateIdle(ctx context.Context, after time.Duration) {
	var idle []string
	s.mu.Lock()
	for key, a := range s.agents {
		if s.idleLocked(key, a, after) {
			idle = append(idle, key)
		}
	}
	s.mu.Unlock()
	for _, key := range idle {
		s.log.Info("hibernating an idle agent", slog.String("workspace", key), slog.Duration("idleAfter", after))
		if err := s.hibernate(ctx, key, after); err != nil {
			s.log.Warn("cannot hibernate an idle agent", slog.String("workspace", key), slog.Any("err", err))
		}
	}
}

// idleLocked reports whether a, the agent of key, has been ready and idle
// for after: no session busy, retrying or waiting for an answer, no prompt
// waiting to go out or being sent. Call it with s.mu held (it takes
// s.prompts.mu).
func (s *Supervisor) idleLocked(key string, a *agent, after time.Duration) bool {
	st := s.statusLocked(a)
	return st.State == workspace.AgentStateReady && (st.Type == workspace.AgentNone || st.Type == workspace.AgentIdle) &&
		st.NeedsInput == 0 && st.Retry.Sessions == 0 && s.opts.Now().Sub(a.activeAt) >= after && !s.promptsWaiting(key)
}

// promptsWaiting reports whether a prompt of key waits for its agent or
// is being handed to it.
func (s *Supervisor) promptsWaiting(key string) bool {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	ob := s.prompts.all[key]
	if ob == nil {
		return false
	}
	for _, p := range ob.all() {
		if p.sending || p.delivery.State == workspace.DeliveryPending {
			return true
		}
	}
	return false
}
