package daemon

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"codehydra/internal/instance"
)

// The workspace manager's projects, loaded in the background, and the
// watch for worktrees changed outside the app.

// loadProjects starts loading in the background and returns: reap agents a
// crashed earlier run left behind, load the saved projects with their
// workspaces and publish them (the UI shows them, the supervisor starts
// their agents), then add the --project paths, announce, and settle on
// one P (settleProcs) settleAfter later. Shutdown
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
		select {
		case <-ctx.Done():
		case <-time.After(settleAfter):
			settleProcs(s.opts.Getenv)
			s.log.Info("started up", "gomaxprocs", runtime.GOMAXPROCS(0))
		}
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
		fmt.Fprintf(s.opts.Stderr, "codehydra: some saved projects could not be loaded: %v\n", err)
		s.log.Warn("loading saved projects", "err", err)
	}
	for _, p := range s.opts.Projects {
		if _, err := s.manager.AddProject(ctx, p); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(s.opts.Stderr, "codehydra: could not add project %s: %v\n", p, err)
			s.log.Warn("add project failed", "path", p, "err", err)
		}
	}
	return nil
}

// watchProjects runs the manager's watch for worktrees added or removed
// outside the app, and the status cache, until shutdown, which stops them
// first.
func (s *server) watchProjects(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	waitCache := s.cache.Start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.manager.Run(ctx)
	}()
	s.onShutdown("stop watching projects", func(context.Context) error {
		cancel()
		<-done
		waitCache()
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
	fmt.Fprintf(s.opts.Stdout, "CodeHydra is running (%s, %d %s). Stop it with Ctrl+C.\n", instance.Info{PID: s.pid, MCPURL: s.mcpURL}.Where(), n, noun)
}
