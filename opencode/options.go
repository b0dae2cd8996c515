package opencode

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"codehydra/internal/paths"
	"codehydra/internal/sandbox"
)

// DefaultMaxAgents is how many agents run at most unless the settings
// say otherwise: each is a Node process of a few hundred MB.
const DefaultMaxAgents = 20

// SupervisorOptions configure a Supervisor. Zero values mean the defaults
// noted; tests shorten the durations.
type SupervisorOptions struct {
	// Bin is the opencode binary (settings.opencodeBin). "" looks for
	// `opencode` on PATH, then for ToolsDir/node_modules/.bin/opencode.
	Bin string
	// BasePort is settings.opencodeBasePort: 0 lets opencode choose;
	// N gives agents N, N+1, … skipping ports in use.
	BasePort int
	// ConfigPath is the file WriteConfig wrote ("" =
	// paths.OpencodeConfigFile()); every agent start reads it, and an
	// agent does not start without it.
	ConfigPath string
	// MCPPort gives the MCP server's port and MCPToken the current token
	// of the workspace at workspacePath (never the master token: an agent
	// may act on its own workspace only); they are asked at every
	// (re)start, so a rotated token reaches an agent when it restarts (see
	// RestartAll).
	MCPPort  func() int
	MCPToken func(workspacePath string) string
	// OnChange is told the workspace path whenever what AgentStatus
	// reports for it changed. It is called from the supervisor's
	// goroutines and must not block.
	OnChange func(path string)
	Logger   *slog.Logger

	// Confine plans how the processes of the agent of the workspace at
	// path are confined (asked at every start); an error keeps the agent
	// from starting, and says why. Nil confines nothing.
	Confine func(ctx context.Context, path string) (sandbox.Plan, error)

	// Env is the environment agents inherit (nil = os.Environ()).
	Env []string
	// AgentsDir holds the orphan records ("" = paths.AgentsDir()).
	AgentsDir string
	// ToolsDir is where `make` installs opencode ("" = paths.ToolsDir()).
	ToolsDir string
	// LookPath finds a program on PATH (nil = exec.LookPath).
	LookPath func(file string) (string, error)
	// Now is the clock for crash accounting (nil = time.Now).
	Now func() time.Time
	// Random is where the agents' server passwords come from (nil =
	// crypto/rand.Reader).
	Random     io.Reader
	HTTPClient *http.Client // nil = a client without timeout (streams are long)

	MaxStarting int // agents starting at once; 0 = 2
	// MaxAgents bounds the agents that run (settings maxAgents; 0 =
	// DefaultMaxAgents). An agent counts from its start until it is
	// stopped, also while it waits after a crash or has failed.
	MaxAgents    int
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

	// HibernateAfter is how long a ready agent may stay idle before
	// HibernateIdle hibernates it, read at each check; nil or 0 = never
	// (settings hibernateAfterMinutes). IdleCheck is how often
	// HibernateIdle looks; 0 = 30s.
	HibernateAfter func() time.Duration
	IdleCheck      time.Duration

	// Tracer gets an "agent.start" span for every start, from spawn to
	// ready (nil = none).
	Tracer trace.TracerProvider

	// OnHibernate, when set, is told the workspace whose agent was just
	// hibernated (by Hibernate or for being idle), once the agent's
	// processes are gone; the hibernation waits for it. The daemon stops
	// the workspace's background tasks there.
	OnHibernate func(ctx context.Context, path string)
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
	def(&o.IdleCheck, 30*time.Second)
	if o.HibernateAfter == nil {
		o.HibernateAfter = func() time.Duration { return 0 }
	}
	if o.Tracer == nil {
		o.Tracer = noop.NewTracerProvider()
	}
	if o.MaxStarting <= 0 {
		o.MaxStarting = 2
	}
	if o.MaxAgents <= 0 {
		o.MaxAgents = DefaultMaxAgents
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
		o.MCPToken = func(string) string { return "" }
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
	if o.Confine == nil {
		o.Confine = func(context.Context, string) (sandbox.Plan, error) {
			return sandbox.Plan{Status: sandbox.Status{Reason: "not confined"}}, nil
		}
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Random == nil {
		o.Random = rand.Reader
	}
	if o.HTTPClient == nil {
		// Agents listen on loopback; no proxy from the environment applies.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		o.HTTPClient = &http.Client{Transport: t}
	}
}
