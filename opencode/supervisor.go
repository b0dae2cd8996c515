package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"codehydra/internal/paths"
	"codehydra/workspace"
)

// InstallHint tells the user how to get opencode.
const InstallHint = "install it with `npm install -g opencode-ai@1.18.33`, or run `make run`, or set opencodeBin in settings"

// SupervisorOptions configure a Supervisor. Zero values mean the defaults
// noted; tests shorten the durations.
type SupervisorOptions struct {
	// Bin is the opencode binary (settings.opencodeBin). "" looks for
	// `opencode` on PATH, then for ToolsDir/node_modules/.bin/opencode.
	Bin string
	// BasePort is settings.opencodeBasePort: 0 lets opencode choose;
	// N gives agents N, N+1, … skipping ports in use.
	BasePort int
	// ConfigPath is the file WriteConfig wrote ("" = paths.OpencodeConfigFile()).
	ConfigPath string
	// MCPPort and MCPToken give the MCP server's port and current token;
	// they are asked at every (re)start, so a rotated token reaches an
	// agent when it restarts (see RestartAll).
	MCPPort  func() int
	MCPToken func() string
	// OnChange is told the workspace path whenever what AgentStatus
	// reports for it changed. It is called from the supervisor's
	// goroutines and must not block.
	OnChange func(path string)
	Logger   *slog.Logger

	// Env is the environment agents inherit (nil = os.Environ()).
	Env []string
	// AgentsDir holds the orphan records ("" = paths.AgentsDir()).
	AgentsDir string
	// ToolsDir is where `make` installs opencode ("" = paths.ToolsDir()).
	ToolsDir string
	// LookPath finds a program on PATH (nil = exec.LookPath).
	LookPath func(file string) (string, error)
	// Now is the clock for crash accounting (nil = time.Now).
	Now        func() time.Time
	HTTPClient *http.Client // nil = a client without timeout (streams are long)

	MaxStarting  int           // agents starting at once; 0 = 2
	ReadyTimeout time.Duration // spawn to ready; 0 = 30s
	StopTimeout  time.Duration // SIGTERM to SIGKILL; 0 = 3s
	PollInterval time.Duration // readiness polling; 0 = 100ms
	BackoffMin   time.Duration // first restart delay after a crash; 0 = 1s
	BackoffMax   time.Duration // 0 = 30s
	HealthyAfter time.Duration // ready this long resets the backoff; 0 = 60s
	CrashWindow  time.Duration // 0 = 2m
	MaxCrashes   int           // crashes within CrashWindow that fail the agent; 0 = 5
	OutputLines  int           // output lines kept per agent; 0 = 50

	EventRetryMin time.Duration // event stream reconnect delay; 0 = 250ms
	EventRetryMax time.Duration // 0 = 5s
	EventIdle     time.Duration // a silent stream is reopened after; 0 = 30s
}

func (o *SupervisorOptions) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadyTimeout, 30*time.Second)
	def(&o.StopTimeout, 3*time.Second)
	def(&o.PollInterval, 100*time.Millisecond)
	def(&o.BackoffMin, time.Second)
	def(&o.BackoffMax, 30*time.Second)
	def(&o.HealthyAfter, 60*time.Second)
	def(&o.CrashWindow, 2*time.Minute)
	def(&o.EventRetryMin, 250*time.Millisecond)
	def(&o.EventRetryMax, 5*time.Second)
	def(&o.EventIdle, 30*time.Second)
	if o.MaxStarting <= 0 {
		o.MaxStarting = 2
	}
	if o.MaxCrashes <= 0 {
		o.MaxCrashes = 5
	}
	if o.OutputLines <= 0 {
		o.OutputLines = 50
	}
	if o.ConfigPath == "" {
		o.ConfigPath = paths.OpencodeConfigFile()
	}
	if o.AgentsDir == "" {
		o.AgentsDir = paths.AgentsDir()
	}
	if o.ToolsDir == "" {
		o.ToolsDir = paths.ToolsDir()
	}
	if o.MCPPort == nil {
		o.MCPPort = func() int { return 0 }
	}
	if o.MCPToken == nil {
		o.MCPToken = func() string { return "" }
	}
	if o.OnChange == nil {
		o.OnChange = func(string) {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		// Agents listen on loopback; no proxy from the environment applies.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		o.HTTPClient = &http.Client{Transport: t}
	}
}

// Supervisor runs one `opencode serve` per workspace. It implements
// workspace.Agents and the MCP server's Agents (OpencodePort).
type Supervisor struct {
	opts      SupervisorOptions
	log       *slog.Logger
	agentsDir string
	sem       chan struct{}
	spawner   *spawner

	mu       sync.Mutex
	agents   map[string]*agent
	reserved map[int]bool // ports held by our agents
	bin      string
	binFound bool
	closed   bool
}

// agent is the supervised agent of one workspace. Its loop goroutine owns
// the process; the fields below mu are shared with readers.
type agent struct {
	ws      workspace.Workspace
	cancel  context.CancelFunc
	done    chan struct{} // closed when the loop returned
	restart chan struct{} // a user's restart request (buffered 1)

	// guarded by Supervisor.mu
	state   workspace.AgentState
	detail  string
	port    int // the ready server's port, else 0
	summary SessionSummary
	out     *lineRing // output of the current or last process
}

// NewSupervisor returns a supervisor; it starts nothing yet.
func NewSupervisor(o SupervisorOptions) *Supervisor {
	o.setDefaults()
	s := &Supervisor{
		opts:      o,
		log:       o.Logger,
		agentsDir: o.AgentsDir,
		sem:       make(chan struct{}, o.MaxStarting),
		spawner:   newSpawner(),
		agents:    map[string]*agent{},
		reserved:  map[int]bool{},
	}
	s.Binary()
	return s
}

// Binary finds the opencode binary now: Bin, else `opencode` on PATH,
// else ToolsDir/node_modules/.bin/opencode. found is false if none
// exists; path is then the place that was expected.
func (s *Supervisor) Binary() (path string, found bool) {
	path, found = s.findBinary()
	s.mu.Lock()
	s.bin, s.binFound = path, found
	s.mu.Unlock()
	return path, found
}

func (s *Supervisor) findBinary() (string, bool) {
	if b := s.opts.Bin; b != "" {
		if !strings.ContainsAny(b, `/\`) {
			if p, err := s.opts.LookPath(b); err == nil {
				return p, true
			}
			return b, false
		}
		return b, isExecutable(b)
	}
	if p, err := s.opts.LookPath("opencode"); err == nil {
		return p, true
	}
	p := filepath.Join(s.opts.ToolsDir, "node_modules", ".bin", "opencode")
	if isExecutable(p) {
		return p, true
	}
	return p, false
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() {
		return false
	}
	if filepath.Ext(p) != "" && os.PathSeparator == '\\' {
		return true
	}
	return fi.Mode()&0o111 != 0
}

func (s *Supervisor) notFoundDetail() string {
	if s.opts.Bin != "" {
		return fmt.Sprintf("opencode not found at %s (opencodeBin in settings) — fix opencodeBin, "+
			"or clear it and install opencode with `npm install -g opencode-ai@1.18.33` or `make run`", s.opts.Bin)
	}
	return "opencode not found — " + InstallHint
}

// Start starts the agent of ws unless one runs already. At most
// MaxStarting agents start at once; the others wait their turn.
func (s *Supervisor) Start(ws workspace.Workspace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	key := filepath.Clean(ws.Path)
	if a := s.agents[key]; a != nil {
		select {
		case <-a.done:
		default:
			return
		}
	}
	s.startLocked(key, ws)
}

func (s *Supervisor) startLocked(key string, ws workspace.Workspace) {
	ctx, cancel := context.WithCancel(context.Background())
	a := &agent{
		ws:      ws,
		cancel:  cancel,
		done:    make(chan struct{}),
		restart: make(chan struct{}, 1),
		state:   workspace.AgentStateStarting,
		out:     newLineRing(s.opts.OutputLines),
	}
	s.agents[key] = a
	go func() {
		defer close(a.done)
		s.run(ctx, key, a)
	}()
}

// Restart stops the agent of path if it runs and starts it again with a
// fresh crash history, the current binary and the current MCP token. It
// also revives a failed or not-found agent. It does not wait.
func (s *Supervisor) Restart(path string) error {
	key := filepath.Clean(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("restart agent: the supervisor is stopped")
	}
	a := s.agents[key]
	if a == nil {
		return fmt.Errorf("restart agent: no agent for workspace %s", path)
	}
	select {
	case <-a.done:
		s.startLocked(key, a.ws)
	default:
		select {
		case a.restart <- struct{}{}:
		default: // a restart is already pending
		}
	}
	return nil
}

// RestartAll restarts every agent, e.g. after the MCP token was rotated.
func (s *Supervisor) RestartAll() {
	s.mu.Lock()
	keys := make([]string, 0, len(s.agents))
	for k := range s.agents {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		_ = s.Restart(k)
	}
}

// StopAgent stops the agent of path and waits until it is gone (SIGTERM to
// its process group, SIGKILL after the stop timeout). Stopping an agent
// that does not run is not an error. It implements workspace.Agents.
func (s *Supervisor) StopAgent(ctx context.Context, path string) error {
	key := filepath.Clean(path)
	s.mu.Lock()
	a := s.agents[key]
	delete(s.agents, key)
	s.mu.Unlock()
	if a == nil {
		return nil
	}
	a.cancel()
	select {
	case <-a.done:
	case <-ctx.Done():
		return fmt.Errorf("stop agent of %s: %w", path, ctx.Err())
	}
	s.opts.OnChange(a.ws.Path)
	return nil
}

// StopAll stops every agent, waits for them, and ends the supervisor;
// Start does nothing afterwards. Call it at quit.
func (s *Supervisor) StopAll(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	agents := make([]*agent, 0, len(s.agents))
	for _, a := range s.agents {
		agents = append(agents, a)
		a.cancel()
	}
	s.mu.Unlock()
	for _, a := range agents {
		select {
		case <-a.done:
		case <-ctx.Done():
			return fmt.Errorf("stop agents: %w", ctx.Err())
		}
	}
	s.spawner.close()
	return nil
}

// AgentStatus reports the agent of the workspace at path. It implements
// workspace.Agents.
func (s *Supervisor) AgentStatus(path string) workspace.AgentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil {
		if !s.binFound {
			return workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateNotFound, Detail: s.notFoundDetail()}
		}
		return workspace.NoAgent
	}
	st := workspace.AgentStatus{Type: workspace.AgentNone, State: a.state, Detail: a.detail}
	if a.state == workspace.AgentStateReady {
		st.Type, st.Counts, st.NeedsInput = a.summary.Type, a.summary.Counts, a.summary.NeedsInput
		st.Port = a.port
	}
	return st
}

// OpencodePort returns the port of the workspace's agent server while it
// is ready, else (0, false). It implements the MCP server's Agents.
func (s *Supervisor) OpencodePort(path string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil || a.state != workspace.AgentStateReady || a.port == 0 {
		return 0, false
	}
	return a.port, true
}

// Output returns the last lines (up to OutputLines) that the workspace's
// agent printed, of the current run or the last one; nil if none.
func (s *Supervisor) Output(path string) []string {
	s.mu.Lock()
	a := s.agents[filepath.Clean(path)]
	s.mu.Unlock()
	if a == nil {
		return nil
	}
	return a.out.snapshot()
}

// set changes what AgentStatus reports for a and tells OnChange if that
// changed.
func (s *Supervisor) set(key string, a *agent, f func()) {
	s.mu.Lock()
	before := s.statusLocked(a)
	f()
	after := s.statusLocked(a)
	current := s.agents[key] == a
	s.mu.Unlock()
	if before != after && current {
		s.opts.OnChange(a.ws.Path)
	}
}

func (s *Supervisor) statusLocked(a *agent) workspace.AgentStatus {
	return workspace.AgentStatus{Type: a.summary.Type, Counts: a.summary.Counts, NeedsInput: a.summary.NeedsInput,
		State: a.state, Detail: a.detail, Port: a.port}
}

// outcome is how one run of an agent process ended.
type outcome int

const (
	outReady    outcome = iota // the process is ready (waitReady only)
	outStopped                 // ctx ended
	outRestart                 // the user asked for a restart
	outCrashed                 // the process exited on its own
	outFailed                  // gave up (not ready in time, or cannot start)
	outNotFound                // no binary
)

// run is the agent's life: start, become ready, serve; after a crash wait
// and start again, until it crashed too often or ctx ends.
func (s *Supervisor) run(ctx context.Context, key string, a *agent) {
	backoff := s.opts.BackoffMin
	var crashes []time.Time
	for {
		res, ranFor, why := s.runOnce(ctx, key, a)
		switch res {
		case outStopped:
			s.set(key, a, func() { a.state, a.detail, a.port, a.summary = workspace.AgentStateStopped, "", 0, SessionSummary{} })
			return
		case outRestart:
			backoff, crashes = s.opts.BackoffMin, nil
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateStarting, "" })
			continue
		case outFailed, outNotFound:
			if !s.waitForRestart(ctx, a) {
				return
			}
			backoff, crashes = s.opts.BackoffMin, nil
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateStarting, "" })
			continue
		}
		// Crashed.
		now := s.opts.Now()
		if ranFor >= s.opts.HealthyAfter {
			backoff = s.opts.BackoffMin
		}
		kept := crashes[:0]
		for _, t := range crashes {
			if now.Sub(t) < s.opts.CrashWindow {
				kept = append(kept, t)
			}
		}
		crashes = append(kept, now)
		if len(crashes) >= s.opts.MaxCrashes {
			detail := fmt.Sprintf("opencode crashed %d times within %s; restart the agent after checking its output",
				len(crashes), s.opts.CrashWindow) + lastLine(a.out.snapshot())
			s.log.Warn("agent keeps crashing; giving up", slog.String("workspace", a.ws.Path), slog.Int("crashes", len(crashes)))
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateFailed, detail })
			if !s.waitForRestart(ctx, a) {
				return
			}
			backoff, crashes = s.opts.BackoffMin, nil
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateStarting, "" })
			continue
		}
		s.log.Info("agent crashed; restarting", slog.String("workspace", a.ws.Path), slog.Duration("in", backoff))
		delay := backoff
		s.set(key, a, func() {
			a.state = workspace.AgentStateStarting
			a.detail = fmt.Sprintf("%s; restarting in %s", why, delay)
		})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateStopped, "" })
			return
		case <-a.restart:
			t.Stop()
			backoff, crashes = s.opts.BackoffMin, nil
			continue
		case <-t.C:
		}
		backoff = min(2*backoff, s.opts.BackoffMax)
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

// maxBindRetries bounds how many ports a start tries when the child finds
// its port taken.
const maxBindRetries = 10

// runOnce starts one process and serves until it ends. ranFor is how long
// it was ready.
func (s *Supervisor) runOnce(ctx context.Context, key string, a *agent) (res outcome, ranFor time.Duration, why string) {
	bin, found := s.Binary()
	if !found {
		detail := s.notFoundDetail()
		s.log.Warn("opencode not found", slog.String("expected", bin))
		s.set(key, a, func() { a.state, a.detail = workspace.AgentStateNotFound, detail })
		return outNotFound, 0, detail
	}

	// The semaphore bounds concurrent starts: each opencode needs a couple
	// of seconds of CPU to come up, and a dozen at once would time out.
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return outStopped, 0, ""
	case <-a.restart:
		return outRestart, 0, ""
	}
	released := false
	release := func() {
		if !released {
			released = true
			<-s.sem
		}
	}
	defer release()

	skip := map[int]bool{}
	var p *process
	var port, askPort int
	for attempt := 0; ; attempt++ {
		askPort = 0
		if s.opts.BasePort > 0 {
			var ok bool
			if askPort, ok = s.reservePort(skip); !ok {
				detail := fmt.Sprintf("no free port from %d on for opencode; change opencodeBasePort in settings", s.opts.BasePort)
				s.set(key, a, func() { a.state, a.detail = workspace.AgentStateFailed, detail })
				return outFailed, 0, detail
			}
		}
		var err error
		p, err = s.spawn(ctx, a, bin, askPort)
		if err != nil {
			s.releasePort(askPort)
			if ctx.Err() != nil {
				return outStopped, 0, ""
			}
			detail := fmt.Sprintf("could not start %s: %v; check opencodeBin in settings", bin, err)
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateFailed, detail })
			return outFailed, 0, detail
		}
		var why string
		port, why, res = s.waitReady(ctx, a, p)
		if res == outReady {
			break
		}
		s.stopProcess(p)
		s.finish(p, askPort)
		if res == outCrashed && askPort != 0 && attempt < maxBindRetries &&
			(bindFailure(p.out.snapshot()) || !portFree(askPort)) {
			// Someone took the port between our check and opencode's bind.
			s.log.Info("agent port taken; trying the next", slog.Int("port", askPort))
			skip[askPort] = true
			continue
		}
		if res == outFailed {
			detail := why + lastLine(p.out.snapshot())
			s.log.Warn("agent did not become ready", slog.String("workspace", a.ws.Path), slog.String("why", why))
			s.set(key, a, func() { a.state, a.detail = workspace.AgentStateFailed, detail })
		}
		return res, 0, why
	}
	release()

	readyAt := s.opts.Now()
	s.updateRecord(p, port, a.ws.Path)
	s.set(key, a, func() {
		a.state, a.detail, a.port, a.summary = workspace.AgentStateReady, "", port, SessionSummary{Type: workspace.AgentNone}
	})
	s.log.Info("agent ready", slog.String("workspace", a.ws.Path), slog.Int("port", port), slog.Int("pid", p.pid))

	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	w := &eventWatcher{
		base: "http://127.0.0.1:" + strconv.Itoa(port), client: s.opts.HTTPClient, log: s.log,
		retryMin: s.opts.EventRetryMin, retryMax: s.opts.EventRetryMax, idle: s.opts.EventIdle,
		publish: func(sum SessionSummary) {
			s.set(key, a, func() {
				if a.state == workspace.AgentStateReady {
					a.summary = sum
				}
			})
		},
	}
	go func() {
		defer close(watchDone)
		w.run(wctx)
	}()

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
	<-watchDone
	s.set(key, a, func() {
		// The server is gone or going: no longer ready, so that nobody
		// reads "ready" without a port (or a type) meanwhile.
		a.port, a.summary = 0, SessionSummary{}
		a.state = workspace.AgentStateStarting
		if res == outStopped {
			a.state = workspace.AgentStateStopped
		}
	})
	if res != outCrashed {
		s.log.Info("stopping agent", slog.String("workspace", a.ws.Path), slog.Int("pid", p.pid))
	}
	s.stopProcess(p)
	s.finish(p, askPort)
	return res, ranFor, why
}

// spawn starts the process of a with the current MCP port and token and
// records it for orphan reaping.
func (s *Supervisor) spawn(ctx context.Context, a *agent, bin string, port int) (*process, error) {
	env := agentEnv(s.opts.Env, s.opts.ConfigPath, a.ws.Path, s.opts.MCPPort(), s.opts.MCPToken())
	p, err := startProcess(ctx, s.spawner, processSpec{bin: bin, dir: a.ws.Path, env: env, port: port, lines: s.opts.OutputLines})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	a.out = p.out
	s.mu.Unlock()
	p.startedAt = s.opts.Now()
	s.updateRecord(p, port, a.ws.Path)
	s.log.Info("agent started", slog.String("workspace", a.ws.Path), slog.Int("pid", p.pid), slog.Int("port", port))
	return p, nil
}

func (s *Supervisor) updateRecord(p *process, port int, ws string) {
	err := writeRecord(s.agentsDir, AgentRecord{PID: p.pid, PGID: p.pid, Port: port, Workspace: ws,
		StartedAt: p.startedAt.UTC(), OwnerPID: os.Getpid()})
	if err != nil {
		s.log.Warn("cannot record agent; a crash may leave it running", slog.Any("err", err))
	}
}

// stopProcess stops p with the configured grace period.
func (s *Supervisor) stopProcess(p *process) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout+5*time.Second)
	defer cancel()
	if err := p.stop(ctx, s.opts.StopTimeout); err != nil {
		s.log.Error("agent did not stop", slog.Int("pid", p.pid), slog.Any("err", err))
	}
}

// finish forgets a process that has ended.
func (s *Supervisor) finish(p *process, port int) {
	if err := removeRecord(s.agentsDir, p.pid); err != nil {
		s.log.Warn("remove agent record", slog.Any("err", err))
	}
	s.releasePort(port)
}

// reservePort picks the first port from BasePort on that no agent of ours
// holds, that is not in skip, and that can be bound now.
func (s *Supervisor) reservePort(skip map[int]bool) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := s.opts.BasePort; p <= 65535; p++ {
		if s.reserved[p] || skip[p] || !portFree(p) {
			continue
		}
		s.reserved[p] = true
		return p, true
	}
	return 0, false
}

func (s *Supervisor) releasePort(p int) {
	if p == 0 {
		return
	}
	s.mu.Lock()
	delete(s.reserved, p)
	s.mu.Unlock()
}

// waitReady waits until p is ready: it printed its listening line,
// /global/health says healthy, and /mcp shows codehydra connected (after
// one POST /mcp/codehydra/connect if it was not). It returns the port, or
// why it is not ready and the outcome: outCrashed if the process exited,
// outFailed on timeout.
func (s *Supervisor) waitReady(ctx context.Context, a *agent, p *process) (port int, why string, res outcome) {
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
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	healthy, posted := false, false
	mcpState := "not checked"
	for {
		if !healthy {
			healthy = s.healthy(ctx, base)
		}
		if healthy {
			st, errText := s.mcpStatus(ctx, base)
			mcpState = st
			if errText != "" {
				mcpState += ": " + errText
			}
			if st == "connected" {
				return port, "", outReady
			}
			if !posted && st != "" && st != "pending" && st != "missing" {
				posted = true
				s.log.Info("agent not connected to the MCP server; asking it to connect",
					slog.String("workspace", a.ws.Path), slog.String("status", st))
				s.post(ctx, base+"/mcp/codehydra/connect")
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

func (s *Supervisor) healthy(ctx context.Context, base string) bool {
	var h struct {
		Healthy bool `json:"healthy"`
	}
	return s.getJSON(ctx, base+"/global/health", &h) == nil && h.Healthy
}

// mcpStatus returns the status of the codehydra MCP server as the agent
// reports it ("connected", "failed", …; "missing" if it has none; "" if
// the agent did not answer) and the error it gave.
func (s *Supervisor) mcpStatus(ctx context.Context, base string) (status, errText string) {
	var m map[string]struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if s.getJSON(ctx, base+"/mcp", &m) != nil {
		return "", ""
	}
	c, ok := m["codehydra"]
	if !ok {
		return "missing", "opencode has no codehydra MCP server configured (is OPENCODE_CONFIG right?)"
	}
	return c.Status, c.Error
}

func (s *Supervisor) getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

func (s *Supervisor) post(ctx context.Context, url string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return
	}
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

var _ workspace.Agents = (*Supervisor)(nil)
