package daemon

import (
	"context"

	"codehydra/internal/inhibit"
	"codehydra/workspace"
)

// Keeping the computer awake while agents work (settings preventSleep).

// keepAwake holds the system's sleep inhibitor while any agent works: it
// follows the agents' changes and tells the guard, which counts the
// working agents a settle time later. Shutdown releases it first of all.
func (s *server) keepAwake(ctx context.Context) error {
	if !s.settings.Get().PreventSleep {
		s.log.Info("the system may sleep while agents work (settings preventSleep is off)")
		return nil
	}
	guard := inhibit.New(inhibit.Options{
		Working: s.agentsWorking,
		Getenv:  s.opts.Getenv,
		Logger:  s.log.With("part", "inhibit"),
	})
	events, unsubscribe := s.events.Subscribe()
	followCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		workspace.Follow(followCtx, events, func(batch []workspace.Event) {
			for _, e := range batch {
				if e.Kind == workspace.EventAgentChanged {
					guard.Changed()
					return
				}
			}
		})
	}()
	s.onShutdown("let the system sleep", func(context.Context) error {
		cancel()
		<-done
		unsubscribe()
		guard.Close()
		return nil
	})
	return nil
}

// agentsWorking counts the agents that work: busy, or retrying a model
// request. An agent whose every busy session waits for the user's answer
// does not count: it would keep the computer awake for as long as the user
// is away.
func (s *server) agentsWorking() int {
	n := 0
	for _, ws := range s.manager.AllWorkspaces() {
		st := s.sup.AgentStatus(ws.Path)
		if st.Retry.Sessions > 0 || st.Counts.Busy > st.NeedsInput {
			n++
		}
	}
	return n
}
