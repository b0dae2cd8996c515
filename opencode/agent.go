package opencode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"codehydra/internal/proc"
	"codehydra/internal/reap"
	"codehydra/workspace"
)

// agent is the supervised agent of one workspace. Its loop goroutine owns
// the process; the fields below mu are shared with readers.
type agent struct {
	ws      workspace.Workspace
	cancel  context.CancelFunc
	done    chan struct{} // closed when the loop returned
	restart chan struct{} // a user's restart request (buffered 1)

	// publishing serializes the changes of set with their OnChange calls
	// (the loop and the event watcher both publish), so that an OnChange
	// that reads AgentStatus sees the very state it announces, and every
	// one in order.
	publishing sync.Mutex

	// guarded by Supervisor.mu
	state  workspace.AgentState
	detail string
	port   int // the ready server's port, else 0
	pid    int // the ready server's process, else 0
	// marker is the ready server's agentIDEnv entry, else "".
	marker string
	// password is what the ready server demands (basic auth as
	// serverUser), else "". A secret: never logged, never recorded.
	password string
	summary  SessionSummary
	out      *lineRing // output of the current or last process
	// sandbox is what confines the current or last process.
	sandbox workspace.AgentSandbox
	// usage is what the agent's sessions cost, kept while it does not run.
	usage Usage
	// activeAt is when its status last changed (or it started): the
	// start of its idle time, for HibernateIdle.
	activeAt time.Time
}

// outcome is how one run of an agent process ended.
type outcome int

const (
	outReady    outcome = iota // the process is ready (from starting it, not an end)
	outStopped                 // ctx ended
	outRestart                 // the user asked for a restart
	outCrashed                 // the process exited on its own
	outFailed                  // gave up (not ready in time, or cannot start)
	outNotFound                // no binary
)

// String names the outcome on an "agent.start" span.
func (o outcome) String() string {
	return [...]string{"ready", "stopped", "restart", "crashed", "failed", "not-found"}[o]
}

// set changes what AgentStatus reports for a and tells OnChange if that
// changed.
func (s *Supervisor) set(key string, a *agent, f func()) {
	a.publishing.Lock()
	defer a.publishing.Unlock()
	s.mu.Lock()
	before := s.statusLocked(a)
	f()
	after := s.statusLocked(a)
	current := s.agents[key] == a
	if !before.Equal(after) {
		a.activeAt = s.opts.Now()
		s.notifyLocked()
	}
	s.mu.Unlock()
	if !before.Equal(after) && current {
		s.opts.OnChange(a.ws.Path)
	}
}

// statusLocked is what AgentStatus reports of a: its sessions only while
// its server is ready.
func (s *Supervisor) statusLocked(a *agent) workspace.AgentStatus {
	st := workspace.AgentStatus{Type: workspace.AgentNone, State: a.state, Detail: a.detail, Sandbox: a.sandbox}
	if a.state == workspace.AgentStateReady {
		st.Type, st.Counts, st.NeedsInput, st.Retry, st.Requests = a.summary.Type, a.summary.Counts, a.summary.NeedsInput, a.summary.Retry, a.summary.Requests
		st.Port = a.port
	}
	st.Usage, st.UsageToday = a.usage.Total, a.usage.Day(s.opts.Now(), time.Local)
	return st
}

// setState sets a's state and detail.
func (s *Supervisor) setState(key string, a *agent, state workspace.AgentState, detail string) {
	if state == workspace.AgentStateFailed || state == workspace.AgentStateNotFound {
		// Whatever revives the agent is the user's to decide; the prompt
		// should not surprise them later.
		s.failPending(key, detail)
	}
	s.set(key, a, func() { a.state, a.detail = state, detail })
}

// run is the agent's life: start, become ready, serve; after a crash wait
// and start again, until it crashed too often or ctx ends.
func (s *Supervisor) run(ctx context.Context, key string, a *agent) {
	backoff := s.opts.BackoffMin
	var crashes []time.Time
	fresh := func() { backoff, crashes = s.opts.BackoffMin, nil }
	for {
		res, ranFor, why := s.runOnce(ctx, key, a)
		switch res {
		case outStopped:
			s.set(key, a, func() {
				a.state, a.detail, a.port, a.pid, a.marker, a.password, a.summary = workspace.AgentStateStopped, "", 0, 0, "", "", SessionSummary{}
			})
			return
		case outRestart:
			fresh()
			s.setState(key, a, workspace.AgentStateStarting, "")
			continue
		case outFailed, outNotFound:
			if !s.waitForRestart(ctx, a) {
				return
			}
			fresh()
			s.setState(key, a, workspace.AgentStateStarting, "")
			continue
		}
		// Crashed.
		now := s.opts.Now()
		if ranFor >= s.opts.HealthyAfter {
			backoff = s.opts.BackoffMin
		}
		crashes = recentCrashes(crashes, now, s.opts.CrashWindow)
		if len(crashes) >= s.opts.MaxCrashes {
			s.giveUp(key, a, len(crashes))
			if !s.waitForRestart(ctx, a) {
				return
			}
			fresh()
			s.setState(key, a, workspace.AgentStateStarting, "")
			continue
		}
		switch s.waitAfterCrash(ctx, key, a, why, backoff) {
		case outStopped:
			return
		case outRestart:
			fresh()
			continue
		}
		backoff = min(2*backoff, s.opts.BackoffMax)
	}
}

// recentCrashes adds a crash at now to the crashes and forgets those older
// than window.
func recentCrashes(crashes []time.Time, now time.Time, window time.Duration) []time.Time {
	kept := crashes[:0]
	for _, t := range crashes {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	return append(kept, now)
}

// giveUp fails an agent that crashed n times within the crash window.
func (s *Supervisor) giveUp(key string, a *agent, n int) {
	detail := fmt.Sprintf("opencode crashed %d times within %s; restart the agent after checking its output",
		n, s.opts.CrashWindow) + lastLine(a.out.snapshot())
	s.log.Warn("agent keeps crashing; giving up", slog.String("workspace", a.ws.Path), slog.Int("crashes", n))
	s.setState(key, a, workspace.AgentStateFailed, detail)
}

// waitAfterCrash reports the crash and waits delay before the next start.
// It returns outCrashed when the delay passed, outRestart when the user
// asked for a restart meanwhile, outStopped (the agent then reports
// stopped) when ctx ended.
func (s *Supervisor) waitAfterCrash(ctx context.Context, key string, a *agent, why string, delay time.Duration) outcome {
	s.log.Info("agent crashed; restarting", slog.String("workspace", a.ws.Path), slog.Duration("in", delay))
	s.setState(key, a, workspace.AgentStateStarting, fmt.Sprintf("%s; restarting in %s", why, delay))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		s.setState(key, a, workspace.AgentStateStopped, "")
		return outStopped
	case <-a.restart:
		return outRestart
	case <-t.C:
		return outCrashed
	}
}

// waitForRestart waits for a user's restart; false if ctx ended first.
func (s *Supervisor) waitForRestart(ctx context.Context, a *agent) bool {
	select {
	case <-ctx.Done():
		return false
	case <-a.restart:
		return true
	}
}

func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(ansiEscape.ReplaceAllString(lines[i], "")); l != "" {
			return ". Its last output: " + l
		}
	}
	return ""
}

// runOnce starts one process and serves until it ends. ranFor is how long
// it was ready.
func (s *Supervisor) runOnce(ctx context.Context, key string, a *agent) (res outcome, ranFor time.Duration, why string) {
	_, span := s.opts.Tracer.Tracer("codehydra").Start(ctx, "agent.start", trace.WithAttributes(attribute.String("codehydra.workspace", key)))
	r, res, why := s.startUntilReady(ctx, key, a)
	span.SetAttributes(attribute.String("codehydra.outcome", res.String()))
	if res != outReady {
		span.SetStatus(codes.Error, res.String())
	}
	span.End()
	if res != outReady {
		return res, 0, why
	}
	return s.serveUntilEnd(ctx, key, a, r)
}

// startedProcess is an agent process that a start spawned. startUntilReady
// hands one over only once it is ready; startOnce also when it did not get
// ready, stopped by then and kept for its output and port.
type startedProcess struct {
	p        *process
	port     int    // where it listens
	askPort  int    // the --port it was given (0 = its own choice), reserved until it ends
	password string // what it demands; new for every start
}

// maxBindRetries bounds how many ports a start tries when the child finds
// its port taken.
const maxBindRetries = 10

// startUntilReady starts a process and waits until it is ready, trying the
// next port when a fixed one turned out to be taken. Unless the outcome is
// outReady, no process runs afterwards and the agent's state says why.
func (s *Supervisor) startUntilReady(ctx context.Context, key string, a *agent) (*startedProcess, outcome, string) {
	bin, found := s.FindBinary()
	if !found {
		detail := s.notFoundDetail()
		s.log.Warn("opencode not found", slog.String("expected", bin))
		s.setState(key, a, workspace.AgentStateNotFound, detail)
		return nil, outNotFound, detail
	}
	release, res := s.takeStartSlot(ctx, a)
	if release == nil {
		return nil, res, ""
	}
	defer release()

	skip := map[int]bool{}
	for attempt := 0; ; attempt++ {
		r, res, why := s.startOnce(ctx, key, a, bin, skip)
		if res == outReady {
			return r, res, ""
		}
		if res == outCrashed && r != nil && r.askPort != 0 && attempt < maxBindRetries &&
			(bindFailure(r.p.out.snapshot()) || !portFree(r.askPort)) {
			// Someone took the port between our check and opencode's bind.
			s.log.Info("agent port taken; trying the next", slog.Int("port", r.askPort))
			skip[r.askPort] = true
			continue
		}
		return nil, res, why
	}
}

// takeStartSlot waits for one of the MaxStarting start slots: each
// opencode needs a couple of seconds of CPU to come up, and a dozen at once
// would time out. Without a slot (release nil), res says why the wait
// ended.
func (s *Supervisor) takeStartSlot(ctx context.Context, a *agent) (release func(), res outcome) {
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem }, 0
	case <-ctx.Done():
		return nil, outStopped
	case <-a.restart:
		return nil, outRestart
	}
}

// startOnce makes one attempt: reserve a port (with a fixed BasePort),
// spawn, wait until ready. A process that did not become ready is stopped
// and forgotten; r then still names it so that the caller can read its
// output and port.
func (s *Supervisor) startOnce(ctx context.Context, key string, a *agent, bin string, skip map[int]bool) (r *startedProcess, res outcome, why string) {
	askPort := 0
	if s.opts.BasePort > 0 {
		var ok bool
		if askPort, ok = s.reservePort(skip); !ok {
			detail := fmt.Sprintf("no free port from %d on for opencode; change opencodeBasePort in settings", s.opts.BasePort)
			s.setState(key, a, workspace.AgentStateFailed, detail)
			return nil, outFailed, detail
		}
	}
	// A fresh password for every start, so that one that leaked (a
	// browser's history) dies with the process.
	password, err := newServerPassword(s.opts.Random)
	var p *process
	if err == nil {
		p, err = s.spawn(ctx, key, a, bin, askPort, password)
	}
	if err != nil {
		s.releasePort(askPort)
		if ctx.Err() != nil {
			return nil, outStopped, ""
		}
		detail := fmt.Sprintf("could not start %s: %v; check opencodeBin in settings", bin, err)
		var ce confineError
		var cfgErr configError
		switch {
		case errors.As(err, &ce) || errors.Is(err, proc.ErrNotConfined):
			detail = "not started: " + err.Error()
		case errors.As(err, &cfgErr):
			detail = "not started: " + err.Error() + "; CodeHydra writes that file when it starts, so restart CodeHydra"
		}
		s.setState(key, a, workspace.AgentStateFailed, detail)
		return nil, outFailed, detail
	}
	r = &startedProcess{p: p, askPort: askPort, password: password}
	r.port, why, res = s.waitReady(ctx, a, p, password)
	if res == outReady {
		return r, res, ""
	}
	s.stopProcess(p)
	s.finish(p, askPort)
	if res == outFailed {
		detail := why + lastLine(p.out.snapshot())
		s.log.Warn("agent did not become ready", slog.String("workspace", a.ws.Path), slog.String("why", why))
		s.setState(key, a, workspace.AgentStateFailed, detail)
	}
	return r, res, why
}

// serveUntilEnd reports the ready process r, follows its events, and
// stops it when ctx ends or the user restarts it; it returns when r is
// gone. ranFor is how long it was ready.
func (s *Supervisor) serveUntilEnd(ctx context.Context, key string, a *agent, r *startedProcess) (res outcome, ranFor time.Duration, why string) {
	p := r.p
	readyAt := s.opts.Now()
	s.updateRecord(p, r.port, a.ws.Path)
	s.set(key, a, func() {
		a.state, a.detail, a.port, a.pid, a.marker, a.password = workspace.AgentStateReady, "", r.port, p.pid, agentIDEnv+"="+p.agentID, r.password
		a.summary = SessionSummary{Type: workspace.AgentNone}
	})
	s.log.Info("agent ready", slog.String("workspace", a.ws.Path), slog.Int("port", r.port), slog.Int("pid", p.pid))

	api := newAgentAPI(s.opts.HTTPClient, r.port, r.password)
	stopWatch := s.watchEvents(ctx, key, a, api)
	s.deliverOnReady(ctx, key, api)
	select {
	case <-ctx.Done():
		res = outStopped
	case <-a.restart:
		res = outRestart
	case <-p.exited:
		res = outCrashed
		why = "opencode stopped unexpectedly (" + p.exitDescription() + ")"
		s.log.Warn("agent exited", slog.String("workspace", a.ws.Path), slog.String("how", p.exitDescription()))
	}
	ranFor = s.opts.Now().Sub(readyAt)
	// The watcher goes first so that no late summary outlives the server.
	stopWatch()
	s.set(key, a, func() {
		// The server is gone or going: no longer ready, so that nobody
		// reads "ready" without a port (or a type) meanwhile.
		a.port, a.pid, a.marker, a.password, a.summary = 0, 0, "", "", SessionSummary{}
		a.state = workspace.AgentStateStarting
		if res == outStopped {
			a.state = workspace.AgentStateStopped
		}
	})
	if res != outCrashed {
		s.log.Info("stopping agent", slog.String("workspace", a.ws.Path), slog.Int("pid", p.pid))
	}
	s.stopProcess(p)
	s.finish(p, r.askPort)
	return res, ranFor, why
}

// confineError is an agent that was not started because its processes
// could not be confined as the settings ask.
type confineError struct{ error }

func (e confineError) Unwrap() error { return e.error }

// configError is an agent that was not started because the OpenCode
// config file could not be read.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }

// spawn starts the process of a with the current MCP port and token and
// the server password, confined as Confine plans, and records it for
// orphan reaping.
func (s *Supervisor) spawn(ctx context.Context, key string, a *agent, bin string, port int, password string) (*process, error) {
	plan, err := s.opts.Confine(ctx, a.ws.Path)
	if err != nil {
		return nil, confineError{err}
	}
	cfg, err := readConfig(s.opts.ConfigPath)
	if err != nil {
		return nil, configError{err}
	}
	env := agentEnv(s.opts.Env, cfg, a.ws.Path, s.opts.MCPPort(), s.opts.MCPToken(a.ws.Path))
	if b, ok := workspace.PortsOf(a.ws.Path); ok {
		env = append(env, b.Env()...)
	}
	env = withServerAuth(append(env, plan.Env...), password)
	p, err := startProcess(ctx, s.spawner, processSpec{bin: bin, dir: a.ws.Path, env: env, port: port,
		lines: s.opts.OutputLines, sandbox: plan.Policy})
	if err != nil {
		return nil, err
	}
	st := plan.Status
	if plan.Policy != nil {
		st = p.proc.Sandbox
	}
	// The sandbox shows with the state change that follows (ready, or
	// why not): one menu rebuild fewer per start.
	s.mu.Lock()
	a.out = p.out
	a.sandbox = workspace.AgentSandbox(st)
	s.mu.Unlock()
	p.startedAt = s.opts.Now()
	s.updateRecord(p, port, a.ws.Path)
	s.log.Info("agent started", slog.String("workspace", a.ws.Path), slog.Int("pid", p.pid), slog.Int("port", port),
		slog.Bool("sandbox", st.Enforced), slog.Int("landlockABI", st.ABI), slog.Bool("unixSocketFilter", st.UnixSocketFilter),
		slog.String("sandboxReason", st.Reason), slog.String("sandboxGaps", st.Gaps))
	return p, nil
}

func (s *Supervisor) updateRecord(p *process, port int, ws string) {
	err := reap.WriteRecord(s.agentsDir, p.pid, newAgentRecord(p, port, ws, os.Getpid()))
	if err != nil {
		s.log.Warn("cannot record agent; a crash may leave it running", slog.Any("err", err))
	}
}

// stopProcess stops p with the configured grace period.
func (s *Supervisor) stopProcess(p *process) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout+5*time.Second)
	defer cancel()
	start := time.Now()
	if err := p.stop(ctx, s.opts.StopTimeout); err != nil {
		s.log.Error("agent did not stop", slog.Int("pid", p.pid), slog.Any("err", err))
		return
	}
	s.log.Info("agent stopped", slog.Int("pid", p.pid), slog.Duration("took", time.Since(start)))
}

// finish forgets a process that has ended.
func (s *Supervisor) finish(p *process, port int) {
	if err := reap.RemoveRecord(s.agentsDir, p.pid); err != nil {
		s.log.Warn("remove agent record", slog.Any("err", err))
	}
	s.releasePort(port)
}

// waitReady waits until p is ready: it printed its listening line,
// /global/health says healthy, and /mcp shows codehydra connected (after
// one POST /mcp/codehydra/connect if it was not). It returns the port, or
// why it is not ready and the outcome: outCrashed if the process exited,
// outFailed on timeout.
func (s *Supervisor) waitReady(ctx context.Context, a *agent, p *process, password string) (port int, why string, res outcome) {
	deadline := time.NewTimer(s.opts.ReadyTimeout)
	defer deadline.Stop()
	timeout := fmt.Sprintf("opencode did not become ready within %s", s.opts.ReadyTimeout)
	select {
	case port = <-p.listening:
	case <-p.exited:
		return 0, "opencode exited while starting (" + p.exitDescription() + ")", outCrashed
	case <-deadline.C:
		return 0, timeout + " (it never said it was listening)", outFailed
	case <-ctx.Done():
		return 0, "", outStopped
	case <-a.restart:
		return 0, "", outRestart
	}
	// The password goes only to a port that the agent itself listens on:
	// a line that named another program's port must not win it.
	if owned, known := listensOn(p.pid, agentIDEnv+"="+p.agentID, port); known && !owned {
		s.log.Warn("agent named a port that none of its processes listens on; not trusting it", slog.String("workspace", a.ws.Path), slog.Int("port", port))
		return 0, fmt.Sprintf("opencode's output named port %d, where none of its own processes listens", port), outFailed
	}
	api := newAgentAPI(s.opts.HTTPClient, port, password)
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	healthy, asked := false, false
	mcpState := "not checked"
	for {
		if !healthy {
			healthy = api.healthy(ctx)
		}
		if healthy {
			st, errText := api.mcpStatus(ctx)
			mcpState = st
			if errText != "" {
				mcpState += ": " + errText
			}
			if st == "connected" {
				return port, "", outReady
			}
			if !asked && st != "" && st != "pending" && st != "missing" {
				asked = true
				s.askToConnect(ctx, api, a, st)
				continue
			}
		}
		select {
		case <-tick.C:
		case <-p.exited:
			return 0, "opencode exited while starting (" + p.exitDescription() + ")", outCrashed
		case <-deadline.C:
			if !healthy {
				return 0, timeout + " (/global/health never reported healthy)", outFailed
			}
			return 0, timeout + fmt.Sprintf(" (not connected to CodeHydra's MCP server: %s)", mcpState), outFailed
		case <-ctx.Done():
			return 0, "", outStopped
		case <-a.restart:
			return 0, "", outRestart
		}
	}
}

// askToConnect asks a starting agent that is not connected to the MCP
// server (status st) to connect. A failed request only costs the agent
// this second chance: the readiness wait goes on and, when the deadline
// passes, names the MCP status the agent last reported.
func (s *Supervisor) askToConnect(ctx context.Context, api agentAPI, a *agent, st string) {
	s.log.Info("agent not connected to the MCP server; asking it to connect",
		slog.String("workspace", a.ws.Path), slog.String("status", st))
	if err := api.connectMCP(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("agent did not take the request to connect to the MCP server",
			slog.String("workspace", a.ws.Path), slog.Any("err", err))
	}
}
