package daemon

import (
	"context"
	"fmt"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
)

// Steps 1b and 4 of a run: the lock that keeps one instance per user, and
// the instance file that tells other programs where that instance is.

// takeLock is step 1b. From here on shutdown releases the lock and removes
// the instance file (also one left behind by a crashed instance).
func (s *server) takeLock() error {
	l, err := instance.Acquire(paths.LockFile())
	if err != nil {
		return err
	}
	s.lock = l
	s.onShutdown("release the lock", func(context.Context) error { return l.Release() })
	// An instance file left by a crashed run names its port and token;
	// while this run holds the lock, the command line takes the file for
	// this run's and would send the token to that port, which another
	// program may hold by now. Gone until this run writes its own.
	if err := instance.Remove(paths.InstanceFile()); err != nil {
		s.log.Warn("cannot remove the instance file of an earlier run", "err", err)
	}
	s.onShutdown("remove the instance file", func(context.Context) error {
		return instance.Remove(paths.InstanceFile())
	})
	return nil
}

// reportRunningInstance tells the user where the instance that holds the
// lock is.
func (s *server) reportRunningInstance() {
	info, running, err := instance.Running(paths.InstanceFile(), paths.LockFile())
	if err != nil || !running {
		fmt.Fprintln(s.opts.Stdout, "CodeHydra is already running (it is still starting up; run `codehydra status` in a moment).")
		return
	}
	fmt.Fprintf(s.opts.Stdout, "CodeHydra is already running (%s).\n", info.Where())
}

// writeInstanceFile is step 4; it runs again when the token is rotated,
// and then keeps the start time, which `codehydra status` shows as uptime.
func (s *server) writeInstanceFile(ctx context.Context) error {
	if s.startedAt.IsZero() {
		s.startedAt = s.opts.Now().UTC().Truncate(time.Second)
	}
	info := instance.Info{
		PID:       s.pid,
		MCPURL:    s.mcpURL,
		MCPPort:   s.mcpPort,
		Token:     s.mcpToken,
		StartedAt: s.startedAt,
	}
	if err := instance.Write(paths.InstanceFile(), info); err != nil {
		return err
	}
	s.log.Info("instance file written", "path", paths.InstanceFile(), "mcpUrl", s.mcpURL)
	return nil
}
