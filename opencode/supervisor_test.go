//go:build unix

package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// envDump is what the fake opencode writes to FAKEOC_ENV_FILE.
type envDump struct {
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
	Args []string `json:"args"`
}

func readEnvDump(t *testing.T, file string) envDump {
	t.Helper()
	var d envDump
	testenv.WaitFor(t, "env dump", 10*time.Second, func() bool {
		b, err := os.ReadFile(file)
		return err == nil && json.Unmarshal(b, &d) == nil
	})
	return d
}

func envValues(env []string, key string) []string {
	var vs []string
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			vs = append(vs, v)
		}
	}
	return vs
}

// starts reads the start times the fake opencode appended to file.
func starts(t *testing.T, file string) []time.Time {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var ts []time.Time
	for _, l := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Unix(0, n))
	}
	return ts
}

// healthy reports whether the ready agent server of the workspace at path
// answers GET /global/health with the password the supervisor gave it.
func healthy(t *testing.T, s *Supervisor, path string) bool {
	t.Helper()
	port, password, ok := s.OpencodeServer(path)
	if !ok {
		return false
	}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/global/health", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("opencode", password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestAgentGetsDesignEnvironmentWorkdirAndFlags(t *testing.T) {
	f := newFixture(t, "FOO=bar", "OPENCODE_CONFIG=/wrong.json", "CODEHYDRA_MCP_TOKEN=inherited", "CODEHYDRA_STALE=1",
		"CODEHYDRA_AGENT_ID=inherited")
	dump := filepath.Join(f.dir, "env.json")
	f.env = append(f.env, "FAKEOC_ENV_FILE="+dump)
	s := f.start(f.options())
	ws := f.workspace("feature")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)

	d := readEnvDump(t, dump)
	want := map[string]string{
		"OPENCODE_CONFIG":          f.config,
		"CODEHYDRA_WORKSPACE_PATH": filepath.ToSlash(ws.Path),
		"CODEHYDRA_MCP_PORT":       strconv.Itoa(f.mcp.port),
		"CODEHYDRA_MCP_TOKEN":      "tok-1",
		"FOO":                      "bar",
	}
	for k, v := range want {
		if got := envValues(d.Env, k); !slices.Equal(got, []string{v}) {
			t.Errorf("%s = %q, want exactly [%q]", k, got, v)
		}
	}
	// The file's codehydra entry again, inline, where a repository's
	// opencode.json cannot override it.
	var inline, file struct {
		MCP map[string]any `json:"mcp"`
	}
	content := envValues(d.Env, "OPENCODE_CONFIG_CONTENT")
	if len(content) != 1 || json.Unmarshal([]byte(content[0]), &inline) != nil || json.Unmarshal([]byte(configJSON), &file) != nil ||
		!reflect.DeepEqual(inline.MCP, file.MCP) {
		t.Errorf("OPENCODE_CONFIG_CONTENT = %q, want the config file's codehydra entry", content)
	}
	// The agent's own marker, the one its record names, for the orphan
	// reaper.
	recs := agentRecords(t, f.agentsDir)
	if len(recs) != 1 || len(recs[0].AgentID) < 20 {
		t.Fatalf("records = %+v, want one with an agent id", recs)
	}
	if got := envValues(d.Env, "CODEHYDRA_AGENT_ID"); !slices.Equal(got, []string{recs[0].AgentID}) {
		t.Errorf("CODEHYDRA_AGENT_ID = %q, want exactly the record's [%q]", got, recs[0].AgentID)
	}
	want["CODEHYDRA_AGENT_ID"] = recs[0].AgentID
	for _, kv := range d.Env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CODEHYDRA_") && want[k] == "" {
			t.Errorf("unexpected inherited %s", k)
		}
	}
	if d.Cwd != ws.Path {
		t.Errorf("cwd = %q, want %q", d.Cwd, ws.Path)
	}
	if got := d.Args[1:]; !slices.Equal(got, []string{"serve", "--hostname", "127.0.0.1", "--port", "0"}) {
		t.Errorf("args = %q", got)
	}

	port, ok := s.OpencodePort(ws.Path)
	if !ok || port != st.Port || !healthy(t, s, ws.Path) {
		t.Errorf("OpencodePort = %d, %v; status port %d", port, ok, st.Port)
	}
	if pid, p, marker, ok := s.AgentProcess(ws.Path); !ok || p != port || pid != recs[0].PID || marker != agentIDEnv+"="+recs[0].AgentID {
		t.Errorf("AgentProcess = %d, %d, %q, %v; want the recorded pid %d, port %d and agent id %q", pid, p, marker, ok, recs[0].PID, port, recs[0].AgentID)
	}
	if st.Type != workspace.AgentNone || st.Detail != "" {
		t.Errorf("status = %+v", st)
	}
	// The agent reached the MCP server with the headers the config file
	// makes of its environment, at the first try.
	want1 := []mcpInit{{Workspace: filepath.ToSlash(ws.Path), Auth: "Bearer tok-1", Accepted: true}}
	if got := f.mcp.initializes(); !slices.Equal(got, want1) {
		t.Errorf("MCP initializes = %+v, want %+v", got, want1)
	}
	if n := connectRequests(t, port); n != 0 {
		t.Errorf("an agent connected at once was asked to connect %d times", n)
	}
}

// The config file is the one source of the agent's codehydra entry: an
// agent started before it is written does not start, and says why.
func TestAnAgentStartedWithoutTheConfigFileDoesNotStartAndSaysWhy(t *testing.T) {
	f := newFixture(t)
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	if err := os.Remove(f.config); err != nil {
		t.Fatal(err)
	}
	s := f.start(f.options())
	ws := f.workspace("early")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateFailed, 10*time.Second)
	if !strings.Contains(st.Detail, f.config) || !strings.Contains(st.Detail, "restart CodeHydra") {
		t.Errorf("detail = %q, want the file and what to do", st.Detail)
	}
	if _, err := os.Stat(startsFile); err == nil {
		t.Error("opencode was started without the config file")
	}
	if err := WriteConfig(f.config); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ws.Path); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
}

func TestRestartPicksUpARotatedToken(t *testing.T) {
	f := newFixture(t)
	dump := filepath.Join(f.dir, "env.json")
	f.env = append(f.env, "FAKEOC_ENV_FILE="+dump)
	var token atomic.Value
	token.Store("tok-1")
	o := f.options()
	o.MCPToken = func(string) string { return token.Load().(string) }
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if got := envValues(readEnvDump(t, dump).Env, "CODEHYDRA_MCP_TOKEN"); !slices.Equal(got, []string{"tok-1"}) {
		t.Fatalf("token = %q", got)
	}
	first := agentRecords(t, f.agentsDir)[0].PID

	token.Store("tok-2")
	f.mcp.setToken("tok-2")
	if err := os.Remove(dump); err != nil {
		t.Fatal(err)
	}
	s.RestartAll()
	testenv.WaitFor(t, "agent restarted with the new token", 10*time.Second, func() bool {
		b, err := os.ReadFile(dump)
		return err == nil && strings.Contains(string(b), "CODEHYDRA_MCP_TOKEN=tok-2")
	})
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	// Ready means connected, which the server now allows only with tok-2.
	inits := f.mcp.initializes()
	if last := inits[len(inits)-1]; last.Auth != "Bearer tok-2" || !last.Accepted {
		t.Errorf("last MCP initialize = %+v, want an accepted one with tok-2", last)
	}
	testenv.WaitFor(t, "old agent gone", 5*time.Second, func() bool { return processGone(first) })
	if err := s.Restart(filepath.Join(f.dir, "unknown")); err == nil {
		t.Error("Restart of an unknown workspace: no error")
	}
}

func TestFixedBasePortSkipsPortsInUse(t *testing.T) {
	f := newFixture(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	base := taken.Addr().(*net.TCPAddr).Port
	o := f.options()
	o.BasePort = base
	s := f.start(o)
	a, b := f.workspace("a"), f.workspace("b")
	s.Start(a)
	s.Start(b)
	pa := waitState(t, s, a.Path, workspace.AgentStateReady, 10*time.Second).Port
	pb := waitState(t, s, b.Path, workspace.AgentStateReady, 10*time.Second).Port
	if pa <= base || pb <= base || pa == pb {
		t.Errorf("ports = %d, %d; want two different ports above the taken %d", pa, pb, base)
	}
	for _, r := range agentRecords(t, f.agentsDir) {
		if r.Port != pa && r.Port != pb {
			t.Errorf("record port %d is neither agent's", r.Port)
		}
	}
}

func TestChildBindFailureRetriesOnTheNextPort(t *testing.T) {
	base := testenv.FreePort(t)
	// The port is free when the supervisor checks, but the child fails to
	// bind it, as when another program takes it in between.
	f := newFixture(t, "FAKEOC_FAIL_PORT="+strconv.Itoa(base))
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	o := f.options()
	o.BasePort = base
	o.MaxCrashes = 1 // a bind failure must not count as a crash
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if st.Port <= base {
		t.Errorf("port = %d, want above %d", st.Port, base)
	}
	if n := len(starts(t, startsFile)); n != 2 {
		t.Errorf("started %d times, want 2", n)
	}
}

func TestAgentThatIsNotReadyInTimeFailsWithItsOutput(t *testing.T) {
	tests := []struct {
		name   string
		env    []string
		setup  func(t *testing.T, f *fixture, o *SupervisorOptions)
		detail []string
		output string
	}{
		{"never listens", []string{"FAKEOC_MODE=hang"}, nil,
			[]string{"did not become ready within 400ms", "never said it was listening", "hanging before listening"},
			"fake opencode: hanging before listening"},
		{"never healthy", []string{"FAKEOC_MODE=unhealthy"}, nil,
			[]string{"did not become ready within 400ms", "/global/health never reported healthy"},
			"opencode server listening on"},
		{"MCP server unreachable", nil, func(t *testing.T, _ *fixture, o *SupervisorOptions) {
			closed := testenv.FreePort(t)
			o.MCPPort = func() int { return closed }
		}, []string{"not connected to CodeHydra's MCP server: failed: ", "connection refused"},
			"opencode server listening on"},
		{"MCP server refuses the token", nil, func(_ *testing.T, _ *fixture, o *SupervisorOptions) {
			o.MCPToken = func(string) string { return "stale" }
		}, []string{"not connected to CodeHydra's MCP server: failed: ", "Unauthorized"},
			"opencode server listening on"},
		// The config file has the entry (an agent does not start without
		// it), but opencode did not take it.
		{"no codehydra MCP configured", []string{"FAKEOC_NO_MCP=1"}, func(*testing.T, *fixture, *SupervisorOptions) {},
			[]string{"not connected to CodeHydra's MCP server: missing: opencode has no codehydra MCP server configured"},
			"opencode server listening on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.env...)
			o := f.options()
			o.ReadyTimeout = 400 * time.Millisecond
			if tt.setup != nil {
				o.ReadyTimeout = time.Second // room for the connection attempts
				tt.setup(t, f, &o)
			}
			s := f.start(o)
			ws := f.workspace("a")
			s.Start(ws)
			st := waitState(t, s, ws.Path, workspace.AgentStateFailed, 10*time.Second)
			for _, want := range tt.detail {
				if !strings.Contains(st.Detail, want) {
					t.Errorf("detail %q lacks %q", st.Detail, want)
				}
			}
			out := strings.Join(s.Output(ws.Path), "\n")
			if !strings.Contains(out, tt.output) || !strings.Contains(out, "fake opencode: starting") {
				t.Errorf("output = %q, want it to hold its first line and %q", out, tt.output)
			}
			if strings.Contains(out, "OPENCODE_SERVER_PASSWORD is not set") {
				t.Errorf("the agent ran without a password: %q", out)
			}
			if _, ok := s.OpencodePort(ws.Path); ok {
				t.Error("OpencodePort reports a failed agent")
			}
			if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
				t.Errorf("failed agent still recorded (running?): %v", recs)
			}
		})
	}
}

func TestAgentIsAskedToConnectToTheMCPServerOnce(t *testing.T) {
	f := newFixture(t)
	// The agent's own first attempt fails, as when the MCP server was not
	// up yet; the supervisor's request makes it try again.
	f.mcp.refuseInits(1)
	s := f.start(f.options())
	ws := f.workspace("a")
	s.Start(ws)
	port := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
	if n := connectRequests(t, port); n != 1 {
		t.Errorf("the agent was asked to connect %d times, want exactly once", n)
	}
	got := f.mcp.initializes()
	if len(got) != 2 || got[0].Accepted || !got[1].Accepted {
		t.Errorf("MCP initializes = %+v, want a refused one, then the accepted one asked for", got)
	}
}

func TestOutputKeepsTheLastFiftyLines(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	if got := s.Output("/nowhere"); got != nil {
		t.Errorf("Output of an unknown workspace = %q", got)
	}
	r := newLineRing(s.opts.OutputLines)
	for i := range 70 {
		r.add(strconv.Itoa(i))
	}
	if got := r.snapshot(); len(got) != 50 || got[0] != "20" {
		t.Errorf("kept %d lines from %q", len(got), got[0])
	}
}

// logRecords collects the supervisor's log records.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
	next slog.Handler
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(ctx context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return l.next.Handle(ctx, r)
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// restartDelays returns the "in" attribute of every restart the
// supervisor logged.
func (l *logRecords) restartDelays() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ds []time.Duration
	for _, r := range l.recs {
		if r.Message != "agent crashed; restarting" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "in" {
				ds = append(ds, a.Value.Duration())
			}
			return true
		})
	}
	return ds
}

func ms(ns ...int) []time.Duration {
	var ds []time.Duration
	for _, n := range ns {
		ds = append(ds, time.Duration(n)*time.Millisecond)
	}
	return ds
}

func TestCrashingAgentRestartsWithGrowingBackoffThenGivesUp(t *testing.T) {
	f := newFixture(t, "FAKEOC_MODE=crash-after=10ms")
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	logs := &logRecords{next: testLogger(t).Handler()}
	o := f.options()
	o.Logger = slog.New(logs)
	o.BackoffMin, o.BackoffMax = 20*time.Millisecond, 80*time.Millisecond
	o.MaxCrashes = 6
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateFailed, 20*time.Second)
	if !strings.Contains(st.Detail, "crashed 6 times within 1m0s") || !strings.Contains(st.Detail, "crashing on purpose") {
		t.Errorf("detail = %q", st.Detail)
	}
	if got, want := logs.restartDelays(), ms(20, 40, 80, 80, 80); !slices.Equal(got, want) {
		t.Errorf("restart delays = %v, want %v", got, want)
	}
	ts := starts(t, startsFile)
	if len(ts) != 6 {
		t.Fatalf("started %d times, want 6", len(ts))
	}
	for i, d := range ms(20, 40, 80, 80, 80) {
		if gap := ts[i+1].Sub(ts[i]); gap < d {
			t.Errorf("start %d came %v after the previous, before its backoff %v", i+2, gap, d)
		}
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}

	// The user restarts it: a fresh history, so it runs again.
	if err := s.Restart(ws.Path); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "a seventh start", 10*time.Second, func() bool { return len(starts(t, startsFile)) >= 7 })
}

// steppingClock jumps far ahead at every reading, so every run looks long
// and every crash lies outside the previous one's window.
type steppingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(3 * time.Minute)
	return c.now
}

func TestBackoffResetsAfterAHealthyRunAndOldCrashesAreForgotten(t *testing.T) {
	f := newFixture(t, "FAKEOC_MODE=crash-after=10ms")
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	logs := &logRecords{next: testLogger(t).Handler()}
	o := f.options()
	o.Logger = slog.New(logs)
	o.Now = (&steppingClock{now: time.Unix(1e9, 0)}).Now
	o.BackoffMin, o.BackoffMax = 20*time.Millisecond, 80*time.Millisecond
	o.MaxCrashes = 3
	o.CrashWindow = 2 * time.Minute
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	testenv.WaitFor(t, "six starts", 20*time.Second, func() bool { return len(starts(t, startsFile)) >= 6 })
	if st := s.AgentStatus(ws.Path); st.State == workspace.AgentStateFailed {
		t.Fatalf("agent gave up on crashes minutes apart: %+v", st)
	}
	for _, d := range logs.restartDelays() {
		if d != 20*time.Millisecond {
			t.Fatalf("restart delays = %v, want all 20ms", logs.restartDelays())
		}
	}
}

func TestAgentThatExitsWhileStartingIsRestarted(t *testing.T) {
	f := newFixture(t, "FAKEOC_EXIT_STARTS=2")
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	s := f.start(f.options())
	ws := f.workspace("a")
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if n := len(starts(t, startsFile)); n != 3 {
		t.Errorf("started %d times, want 3", n)
	}
}

func TestStopAgentKillsItsWholeProcessGroup(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		// child names the variable that asks the fake for the child
		// whose end the test waits for.
		child string
	}{
		{"agent obeys SIGTERM", nil, "FAKEOC_GRANDCHILD_PIDFILE"},
		{"agent ignores SIGTERM", []string{"FAKEOC_IGNORE_TERM=1"}, "FAKEOC_GRANDCHILD_PIDFILE"},
		// What left the group (setsid) is found by the agent's marker.
		{"a child left the group", nil, "FAKEOC_ESCAPEE_PIDFILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.env...)
			gc := filepath.Join(f.dir, "grandchild.pid")
			f.env = append(f.env, tt.child+"="+gc)
			o := f.options()
			o.StopTimeout = 300 * time.Millisecond
			s := f.start(o)
			ws := f.workspace("a")
			s.Start(ws)
			waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
			leader := agentRecords(t, f.agentsDir)[0].PID
			grandchild := readPID(t, gc)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			begin := time.Now()
			if err := s.StopAgent(ctx, ws.Path); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("StopAgent took %v", took)
			}
			if !processGone(leader) {
				t.Error("agent still runs after StopAgent returned")
			}
			testenv.WaitFor(t, "grandchild gone", 5*time.Second, func() bool { return processGone(grandchild) })
			if st := s.AgentStatus(ws.Path); !st.Equal(workspace.NoAgent) {
				t.Errorf("status after stop = %+v", st)
			}
			if _, ok := s.OpencodePort(ws.Path); ok {
				t.Error("OpencodePort after stop")
			}
			if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
				t.Errorf("records left: %v", recs)
			}
			if err := s.StopAgent(ctx, ws.Path); err != nil {
				t.Errorf("second StopAgent: %v", err)
			}
		})
	}
}

func TestStopAllStopsEveryAgentAndLaterStartsDoNothing(t *testing.T) {
	f := newFixture(t)
	s := NewSupervisor(f.options())
	a, b := f.workspace("a"), f.workspace("b")
	s.Start(a)
	s.Start(b)
	waitState(t, s, a.Path, workspace.AgentStateReady, 10*time.Second)
	waitState(t, s, b.Path, workspace.AgentStateReady, 10*time.Second)
	var pids []int
	for _, r := range agentRecords(t, f.agentsDir) {
		pids = append(pids, r.PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.StopAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("agent %d runs after StopAll", pid)
		}
	}
	if st := s.AgentStatus(a.Path); st.State != workspace.AgentStateStopped {
		t.Errorf("status after StopAll = %+v", st)
	}
	c := f.workspace("c")
	s.Start(c)
	if st := s.AgentStatus(c.Path); !st.Equal(workspace.NoAgent) {
		t.Errorf("Start after StopAll started something: %+v", st)
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
}

func TestAtMostTwoAgentsStartAtOnce(t *testing.T) {
	f := newFixture(t, "FAKEOC_MODE=slow=300ms")
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	s := f.start(f.options())
	var wss []workspace.Workspace
	for i := range 4 {
		ws := f.workspace(fmt.Sprint("w", i))
		wss = append(wss, ws)
		s.Start(ws)
	}
	for _, ws := range wss {
		waitState(t, s, ws.Path, workspace.AgentStateReady, 20*time.Second)
	}
	ts := starts(t, startsFile)
	if len(ts) != 4 {
		t.Fatalf("started %d times, want 4", len(ts))
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	// Each start takes 300ms; a third may begin only when one of the first
	// two is ready.
	for i := 2; i < 4; i++ {
		if gap := ts[i].Sub(ts[i-2]); gap < 300*time.Millisecond {
			t.Errorf("start %d began %v after start %d; more than two were starting at once", i+1, gap, i-1)
		}
	}
}

func TestOpencodePortOnlyWhileReady(t *testing.T) {
	f := newFixture(t, "FAKEOC_MODE=slow=300ms")
	s := f.start(f.options())
	ws := f.workspace("a")
	if _, ok := s.OpencodePort(ws.Path); ok {
		t.Error("OpencodePort before start")
	}
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateStarting, 5*time.Second)
	if p, ok := s.OpencodePort(ws.Path); ok {
		t.Errorf("OpencodePort while starting = %d", p)
	}
	st := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if p, ok := s.OpencodePort(ws.Path); !ok || p != st.Port || p == 0 {
		t.Errorf("OpencodePort when ready = %d, %v", p, ok)
	}
}

func TestMissingBinaryReportsNotFoundUntilInstalled(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.Bin = ""
	s := f.start(o)
	if p, found := s.FindBinary(); found || p != filepath.Join(o.ToolsDir, "node_modules", ".bin", "opencode") {
		t.Errorf("FindBinary() = %q, %v", p, found)
	}
	ws := f.workspace("a")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateNotFound, 5*time.Second)
	want := "opencode not found — install it with `npm install -g opencode-ai@1.18.33`, or run `make run`, or set opencodeBin in settings"
	if st.Detail != want {
		t.Errorf("detail = %q, want %q", st.Detail, want)
	}
	if other := s.AgentStatus(filepath.Join(f.dir, "other")); other.State != workspace.AgentStateNotFound || other.Detail != want {
		t.Errorf("status of a workspace never started = %+v", other)
	}
	if _, ok := s.OpencodePort(ws.Path); ok {
		t.Error("OpencodePort without a binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.StopAgent(ctx, filepath.Join(f.dir, "other")); err != nil {
		t.Errorf("StopAgent: %v", err)
	}

	// `make` installs opencode into the tools folder; a restart finds it.
	bin := filepath.Join(o.ToolsDir, "node_modules", ".bin", "opencode")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fakeBin, bin); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ws.Path); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if p, found := s.FindBinary(); !found || p != bin {
		t.Errorf("FindBinary() = %q, %v; want %q", p, found, bin)
	}
}

func TestMissingConfiguredBinaryNamesTheSetting(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.Bin = filepath.Join(f.dir, "no-such-opencode")
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateNotFound, 5*time.Second)
	for _, want := range []string{o.Bin, "opencodeBin", "npm install -g opencode-ai@1.18.33"} {
		if !strings.Contains(st.Detail, want) {
			t.Errorf("detail %q lacks %q", st.Detail, want)
		}
	}
}

func TestBinaryLookupOrder(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	toolsBin := filepath.Join(tools, "node_modules", ".bin", "opencode")
	if err := os.MkdirAll(filepath.Dir(toolsBin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(toolsBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return "/usr/bin/opencode", nil }
	notOnPath := func(string) (string, error) { return "", os.ErrNotExist }
	tests := []struct {
		name     string
		bin      string
		lookPath func(string) (string, error)
		tools    string
		want     string
		found    bool
	}{
		{"settings first", fakeBin, onPath, tools, fakeBin, true},
		{"settings naming a missing file", filepath.Join(dir, "nope"), onPath, tools, filepath.Join(dir, "nope"), false},
		{"settings naming a file that cannot run", notExec, onPath, tools, notExec, false},
		{"settings naming a program on PATH", "opencode", onPath, tools, "/usr/bin/opencode", true},
		{"PATH second", "", onPath, tools, "/usr/bin/opencode", true},
		{"tools folder last", "", notOnPath, tools, toolsBin, true},
		{"none", "", notOnPath, filepath.Join(dir, "empty"), filepath.Join(dir, "empty", "node_modules", ".bin", "opencode"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSupervisor(SupervisorOptions{Bin: tt.bin, LookPath: tt.lookPath, ToolsDir: tt.tools, AgentsDir: dir, ConfigPath: "x"})
			defer s.StopAll(context.Background())
			got, found := s.FindBinary()
			if got != tt.want || found != tt.found {
				t.Errorf("FindBinary() = %q, %v; want %q, %v", got, found, tt.want, tt.found)
			}
		})
	}
}

func TestAgentStatusFollowsTheEventStream(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws := f.workspace("a")
	s.Start(ws)
	port := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
	// Let the watcher connect before the first event.
	testenv.WaitFor(t, "event stream connected", 5*time.Second, func() bool { return eventClients(t, port) > 0 })

	expect := func(what string, typ workspace.AgentType, counts workspace.AgentCounts, needs int) {
		t.Helper()
		testenv.WaitFor(t, what, 5*time.Second, func() bool {
			st := s.AgentStatus(ws.Path)
			return st.Type == typ && st.Counts == counts && st.NeedsInput == needs
		})
	}
	drain(f.changes)
	emit(t, port, false, EventSessionCreated, map[string]any{"sessionID": "ses_1", "info": map[string]any{"id": "ses_1"}})
	expect("idle session", workspace.AgentIdle, workspace.AgentCounts{Idle: 1, Total: 1}, 0)
	if !changed(f.changes, ws.Path) {
		t.Error("no OnChange for a new session")
	}
	emit(t, port, false, EventSessionStatus, status("ses_1", "busy"))
	expect("busy session", workspace.AgentBusy, workspace.AgentCounts{Busy: 1, Total: 1}, 0)
	emit(t, port, false, EventSessionCreated, map[string]any{"sessionID": "ses_2", "info": map[string]any{"id": "ses_2"}})
	expect("mixed", workspace.AgentMixed, workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}, 0)
	emit(t, port, false, EventPermissionAsked, map[string]any{"id": "per_1", "sessionID": "ses_1"})
	expect("needs input", workspace.AgentMixed, workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}, 1)
	emit(t, port, false, EventPermissionReplied, map[string]any{"sessionID": "ses_1", "requestID": "per_1", "reply": "once"})
	expect("permission answered", workspace.AgentMixed, workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}, 0)
	emit(t, port, false, EventSessionStatus, retry("ses_1", 3, "Cannot connect to API"))
	expect("retrying", workspace.AgentMixed, workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}, 0)
	want := workspace.AgentRetry{Sessions: 1, Attempt: 3, Message: "Cannot connect to API", Next: retryNext}
	testenv.WaitFor(t, "the retry reported", 5*time.Second, func() bool { return s.AgentStatus(ws.Path).Retry == want })
	emit(t, port, false, EventSessionStatus, status("ses_1", "idle"))
	expect("idle again", workspace.AgentIdle, workspace.AgentCounts{Idle: 2, Total: 2}, 0)
	if r := s.AgentStatus(ws.Path).Retry; r != (workspace.AgentRetry{}) {
		t.Errorf("idle agent still reports retry %+v", r)
	}
}

func TestAgentStatusResyncsAfterTheStreamBreaks(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws := f.workspace("a")
	s.Start(ws)
	port := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
	testenv.WaitFor(t, "event stream connected", 5*time.Second, func() bool { return eventClients(t, port) > 0 })
	emit(t, port, false, EventSessionStatus, status("ses_1", "busy"))
	testenv.WaitFor(t, "busy", 5*time.Second, func() bool { return s.AgentStatus(ws.Path).Type == workspace.AgentBusy })

	// While the stream is down the session finishes and another asks a
	// question; neither event reaches the supervisor.
	emit(t, port, true, EventSessionStatus, status("ses_1", "idle"))
	emit(t, port, true, EventQuestionAsked, map[string]any{"id": "que_1", "sessionID": "ses_1"})
	post(t, fmt.Sprintf("http://127.0.0.1:%d/fake/drop", port))
	testenv.WaitFor(t, "resynced status", 5*time.Second, func() bool {
		st := s.AgentStatus(ws.Path)
		return st.Type == workspace.AgentIdle && st.NeedsInput == 1
	})

	// A retry missed while disconnected comes back with its details from
	// GET /session/status.
	emit(t, port, true, EventSessionStatus, retry("ses_1", 2, "Cannot connect to API"))
	post(t, fmt.Sprintf("http://127.0.0.1:%d/fake/drop", port))
	want := workspace.AgentRetry{Sessions: 1, Attempt: 2, Message: "Cannot connect to API", Next: retryNext}
	testenv.WaitFor(t, "resynced retry", 5*time.Second, func() bool {
		st := s.AgentStatus(ws.Path)
		return st.Type == workspace.AgentBusy && st.Retry == want
	})
}

func TestCrashResetsTheStatusAndNotifies(t *testing.T) {
	f := newFixture(t, "FAKEOC_MODE=crash-after=3s") // time to see it busy first, even on a loaded machine
	o := f.options()
	o.BackoffMin = 2 * time.Second // long enough to look at the restarting agent
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	port := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
	testenv.WaitFor(t, "event stream connected", 5*time.Second, func() bool { return eventClients(t, port) > 0 })
	emit(t, port, false, EventSessionStatus, status("ses_1", "busy"))
	testenv.WaitFor(t, "busy", 5*time.Second, func() bool { return s.AgentStatus(ws.Path).Type == workspace.AgentBusy })
	drain(f.changes)
	// The crash is published as starting first, then with the reason and
	// the delay: wait for the latter, which must come well before the 2 s
	// restart.
	var st workspace.AgentStatus
	testenv.WaitFor(t, "starting, with the crash's reason", 5*time.Second, func() bool {
		st = s.AgentStatus(ws.Path)
		return st.State == workspace.AgentStateStarting && st.Detail != ""
	})
	if st.Type != workspace.AgentNone || st.Port != 0 || !strings.Contains(st.Detail, "stopped unexpectedly") ||
		!strings.Contains(st.Detail, "restarting in 2s") {
		t.Errorf("status after crash = %+v", st)
	}
	if !changed(f.changes, ws.Path) {
		t.Error("no OnChange after the crash")
	}
}

// eventClients counts the fake opencode's open event streams.
func eventClients(t *testing.T, port int) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/fake/clients", port))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var n int
	_ = json.NewDecoder(resp.Body).Decode(&n)
	return n
}

func post(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func drain(c *changes) {
	for {
		select {
		case <-c.ch:
		default:
			return
		}
	}
}

// changed waits briefly for an OnChange of path.
func changed(c *changes, path string) bool {
	deadline := time.After(5 * time.Second)
	for {
		select {
		case p := <-c.ch:
			if p == path {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// countingTransport counts the event streams the supervisor opens.
type countingTransport struct {
	base   http.RoundTripper
	events atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/event" {
		c.events.Add(1)
	}
	return c.base.RoundTrip(r)
}

func TestAnEventStreamWithHeartbeatsStaysOpenAndASilentOneIsReopened(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat string
		reopened  bool
	}{
		{"heartbeats well within the idle limit", "50ms", false},
		{"silent past the idle limit", "1h", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "FAKEOC_HEARTBEAT="+tc.heartbeat)
			counter := &countingTransport{base: &http.Transport{Proxy: nil}}
			o := f.options()
			o.HTTPClient = &http.Client{Transport: counter}
			o.EventIdle = 400 * time.Millisecond
			s := f.start(o)
			ws := f.workspace("a")
			s.Start(ws)
			port := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
			testenv.WaitFor(t, "event stream connected", 5*time.Second, func() bool { return eventClients(t, port) > 0 })
			if tc.reopened {
				testenv.WaitFor(t, "the silent stream reopened twice", 10*time.Second, func() bool { return counter.events.Load() >= 3 })
				return
			}
			// Nothing is awaited here: the stream must stay as it is for
			// several idle limits.
			time.Sleep(5 * o.EventIdle)
			if n := counter.events.Load(); n != 1 {
				t.Errorf("event streams opened = %d over %s of heartbeats, want 1", n, 5*o.EventIdle)
			}
		})
	}
}

func TestStartAnnouncesStartingBeforeTheAgentIsReady(t *testing.T) {
	// The fake waits before it listens, so the agent is starting for a
	// while; a tray that hears nothing until it is ready shows "no agent".
	f := newFixture(t, "FAKEOC_MODE=slow=2s")
	s := f.start(f.options())
	ws := f.workspace("a")
	drain(f.changes)
	s.Start(ws)
	if !changed(f.changes, ws.Path) {
		t.Fatal("no OnChange after Start")
	}
	seen := f.changes.published(ws.Path)
	if len(seen) == 0 || seen[0].State != workspace.AgentStateStarting {
		t.Fatalf("first published status = %+v, want starting", seen)
	}
	st := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if st.Type != workspace.AgentNone {
		t.Errorf("ready agent's type = %q, want none", st.Type)
	}
}

func TestAgentUsageFollowsTheEventStreamAndResyncs(t *testing.T) {
	now := time.Now().UnixMilli()
	// session is a session event of a session in dir ("": the fake's
	// own folder).
	session := func(dir, id string, cost float64, input, output int64) map[string]any {
		return map[string]any{"sessionID": id, "info": map[string]any{"id": id, "directory": dir, "cost": cost, "tokens": tok(input, output, 0, 0, 0),
			"time": map[string]any{"created": now, "updated": now}}}
	}
	// What an earlier run of the agent left: a session and its message
	// of today; and a session of another worktree of the repository,
	// which opencode lists too, with its message.
	sibling := t.TempDir()
	before, err := json.Marshal([]any{
		map[string]any{"type": EventSessionUpdated, "properties": session("", "ses_0", 2, 200, 20)},
		map[string]any{"type": EventSessionUpdated, "properties": session(sibling, "ses_x", 7, 700, 70)},
		map[string]any{"type": EventMessageUpdated, "properties": assistant("msg_x", "ses_x", 7, tok(700, 70, 0, 0, 0), now)},
		map[string]any{"type": EventMessageUpdated, "properties": assistant("msg_0", "ses_0", 2, tok(200, 20, 0, 0, 0), now)},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "FAKEOC_EVENTS="+string(before))
	s := f.start(f.options())
	ws := f.workspace("a")
	s.Start(ws)
	port := waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
	usage := func(in, out int64, cost float64) workspace.AgentUsage {
		return workspace.AgentUsage{InputTokens: in, OutputTokens: out, Cost: cost}
	}
	expect := func(what string, total, today, spent workspace.AgentUsage) {
		t.Helper()
		if !testenv.Poll(5*time.Second, 5*time.Millisecond, func() bool {
			st := s.AgentStatus(ws.Path)
			return st.Usage == total && st.UsageToday == today && s.UsageSpent() == spent
		}) {
			st := s.AgentStatus(ws.Path)
			t.Fatalf("%s: usage %+v, today %+v, spent %+v; want %+v, %+v, %+v", what, st.Usage, st.UsageToday, s.UsageSpent(), total, today, spent)
		}
	}
	// The first read is what the workspace cost so far, not spending of
	// this run.
	expect("the earlier run's usage", usage(200, 20, 2), usage(200, 20, 2), usage(0, 0, 0))

	drain(f.changes)
	emit(t, port, false, EventSessionUpdated, session(sibling, "ses_y", 1, 100, 10))
	emit(t, port, false, EventMessageUpdated, assistant("msg_y", "ses_y", 1, tok(100, 10, 0, 0, 0), now))
	emit(t, port, false, EventSessionUpdated, session(ws.Path, "ses_1", 0.5, 10, 5))
	expect("a new session's totals", usage(210, 25, 2.5), usage(200, 20, 2), usage(10, 5, 0.5))
	if !changed(f.changes, ws.Path) {
		t.Error("no OnChange for new usage")
	}
	emit(t, port, false, EventMessageUpdated, assistant("msg_1", "ses_1", 0.5, tok(10, 5, 0, 0, 0), now))
	expect("today's message", usage(210, 25, 2.5), usage(210, 25, 2.5), usage(10, 5, 0.5))

	// A turn that ends while the stream is down comes back from GET
	// /session and the session's messages, and counts as spent too.
	emit(t, port, true, EventMessageUpdated, assistant("msg_2", "ses_1", 1, tok(20, 4, 0, 0, 0), now))
	emit(t, port, true, EventSessionUpdated, session(ws.Path, "ses_1", 1.5, 30, 9))
	post(t, fmt.Sprintf("http://127.0.0.1:%d/fake/drop", port))
	expect("resynced usage", usage(230, 29, 3.5), usage(230, 29, 3.5), usage(30, 9, 1.5))
}
