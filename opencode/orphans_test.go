//go:build unix

package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/reap"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// crashingAppEnv makes the test binary act as a CodeHydra that starts one
// agent, says "READY", and waits to be killed.
const crashingAppEnv = "CODEHYDRA_TEST_CRASHING_APP"

type crashingAppSpec struct {
	Bin, AgentsDir, Config, Workspace string
	Env                               []string
	MCPPort                           int
	MCPToken                          string
}

func runCrashingApp() {
	var spec crashingAppSpec
	if err := json.Unmarshal([]byte(os.Getenv(crashingAppEnv)), &spec); err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(2)
	}
	s := NewSupervisor(SupervisorOptions{
		Bin: spec.Bin, AgentsDir: spec.AgentsDir, ConfigPath: spec.Config, Env: spec.Env,
		MCPPort: func() int { return spec.MCPPort }, MCPToken: func(string) string { return spec.MCPToken },
		PollInterval: 10 * time.Millisecond, ReadyTimeout: 10 * time.Second,
	})
	s.Start(workspace.Workspace{Name: "w", Path: spec.Workspace})
	ready := func() bool { return s.AgentStatus(spec.Workspace).State == workspace.AgentStateReady }
	if !testenv.Poll(10*time.Second, 10*time.Millisecond, ready) {
		fmt.Println("agent not ready:", s.AgentStatus(spec.Workspace).Detail)
		os.Exit(2)
	}
	fmt.Println("READY")
	select {}
}

// startCrashingApp runs the test binary as an app with one agent and
// returns it once the agent is ready.
func startCrashingApp(t *testing.T, f *fixture, ws workspace.Workspace) *exec.Cmd {
	t.Helper()
	return testenv.StartReadyApp(t, crashingAppEnv, crashingAppSpec{Bin: fakeBin, AgentsDir: f.agentsDir, Config: f.config,
		Workspace: ws.Path, Env: f.env, MCPPort: f.mcp.port, MCPToken: "tok-1"})
}

// agentRecords reads the records in dir.
func agentRecords(t *testing.T, dir string) []AgentRecord {
	t.Helper()
	recs, bad, err := reap.ReadRecords[AgentRecord](dir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("readRecords: %v, bad files %v", err, bad)
	}
	return recs
}

func TestReapOrphansKillsTheAgentOfACrashedApp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux can prove a process is an agent's (see markedMembers); elsewhere nothing is reaped")
	}
	f := newFixture(t, "FAKEOC_IGNORE_TERM=1") // survives the death signal, like an agent on macOS
	ws := f.workspace("a")
	gcFile := filepath.Join(f.dir, "grandchild.pid")
	f.env = append(f.env, "FAKEOC_GRANDCHILD_PIDFILE="+gcFile)
	app := startCrashingApp(t, f, ws)

	recs := agentRecords(t, f.agentsDir)
	if len(recs) != 1 {
		t.Fatalf("records = %v, want one", recs)
	}
	r := recs[0]
	if r.Workspace != ws.Path || r.PGID != r.PID || r.Port == 0 || r.OwnerPID != app.Process.Pid || r.StartedAt.IsZero() ||
		r.BootID != reap.BootID() || r.StartTime == 0 || r.AgentID == "" || r.OwnerStartTime == 0 {
		t.Errorf("record = %+v", r)
	}
	fi, err := os.Stat(reap.RecordPath(f.agentsDir, r.PID))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode = %v, want 0600", fi.Mode().Perm())
	}
	grandchild := readPID(t, gcFile)

	// The app crashes hard.
	if err := app.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = app.Wait()
	if processGone(r.PID) {
		t.Fatal("agent died with the app although it ignores SIGTERM; the test proves nothing")
	}

	o := f.options()
	o.StopTimeout = 300 * time.Millisecond
	s := f.start(o)
	killed, err := s.ReapOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Errorf("ReapOrphans killed %d groups, want 1", killed)
	}
	testenv.WaitFor(t, "orphaned agent gone", 5*time.Second, func() bool { return processGone(r.PID) })
	testenv.WaitFor(t, "orphan's grandchild gone", 5*time.Second, func() bool { return processGone(grandchild) })
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
}

func TestAgentDiesWithItsAppOnLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only; elsewhere ReapOrphans cleans up")
	}
	f := newFixture(t)
	ws := f.workspace("a")
	app := startCrashingApp(t, f, ws)
	recs := agentRecords(t, f.agentsDir)
	if len(recs) != 1 {
		t.Fatalf("records = %v, want one", recs)
	}
	if err := app.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = app.Wait()
	testenv.WaitFor(t, "agent gone after its app was killed", 5*time.Second, func() bool { return processGone(recs[0].PID) })
}

func TestReapOrphansNeverKillsAProcessThatIsNotOpencode(t *testing.T) {
	f := newFixture(t)
	// A process that is not opencode but leads its own group, as a reused
	// pid might.
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	})
	pid := other.Process.Pid
	stale := AgentRecord{PID: pid, PGID: pid, Port: 1234, Workspace: "/x", StartedAt: time.Now(), OwnerPID: 999999}
	if err := reap.WriteRecord(f.agentsDir, stale.PID, stale); err != nil {
		t.Fatal(err)
	}
	// A record whose process is long gone, and a broken one.
	gone := AgentRecord{PID: 999999999, PGID: 999999999, Workspace: "/y", OwnerPID: 999999}
	if err := reap.WriteRecord(f.agentsDir, gone.PID, gone); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.agentsDir, "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}

	s := f.start(f.options())
	killed, err := s.ReapOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if killed != 0 {
		t.Errorf("ReapOrphans killed %d groups, want 0", killed)
	}
	if processGone(pid) {
		t.Fatal("ReapOrphans killed a process that is not opencode")
	}
	entries, err := os.ReadDir(f.agentsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("stale records left: %v", entries)
	}
}

func TestReapOrphansSkipsAnOpencodeThatNoLongerLeadsTheRecordedGroup(t *testing.T) {
	f := newFixture(t)
	// An opencode in the test's own process group: its pid matches a
	// record, and it even carries the record's marker, but the group does
	// not match, so it is someone else's.
	oc := exec.Command(fakeBin, "serve", "--hostname", "127.0.0.1", "--port", "0")
	oc.Env = append(f.env, agentIDEnv+"=the-marker")
	if err := oc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = oc.Process.Kill()
		_ = oc.Wait()
	})
	pid := oc.Process.Pid
	start, _ := reap.StartTime(pid)
	rec := AgentRecord{PID: pid, PGID: pid, OwnerPID: 999999, BootID: reap.BootID(), StartTime: start, AgentID: "the-marker"}
	if err := reap.WriteRecord(f.agentsDir, rec.PID, rec); err != nil {
		t.Fatal(err)
	}
	s := f.start(f.options())
	if killed, err := s.ReapOrphans(); err != nil || killed != 0 {
		t.Fatalf("ReapOrphans = %d, %v; want 0, nil", killed, err)
	}
	if processGone(pid) {
		t.Fatal("ReapOrphans killed an opencode it did not start")
	}
}

func TestReapOrphansLeavesRecordsOfItsOwnProcess(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if killed, err := s.ReapOrphans(); err != nil || killed != 0 {
		t.Fatalf("ReapOrphans = %d, %v; want 0, nil", killed, err)
	}
	if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady {
		t.Fatalf("own agent hurt by ReapOrphans: %+v", st)
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 1 {
		t.Errorf("records = %v, want the running agent's", recs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.StopAgent(ctx, ws.Path); err != nil {
		t.Fatal(err)
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("record left after stop: %v", recs)
	}
}

func TestLooksLikeOpencodeServe(t *testing.T) {
	tests := []struct {
		cmdline string
		want    bool
	}{
		{"/root/.local/share/codehydra/tools/node_modules/.bin/opencode serve --hostname 127.0.0.1 --port 0", true},
		{"node /usr/lib/node_modules/opencode-ai/bin/opencode serve --port 4096", true},
		{`C:\tools\opencode.exe serve --port 1`, true},
		{"/tmp/fake/opencode serve", true},
		{"vim opencode serve", false}, // "opencode" is an argument of vim, not the program
		{"sleep 60", false},
		{"/usr/bin/opencode run hello", false},
		{"bash -c opencode-watch serve", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := looksLikeOpencodeServe(strings.Fields(tt.cmdline)); got != tt.want {
			t.Errorf("looksLikeOpencodeServe(%q) = %v, want %v", tt.cmdline, got, tt.want)
		}
	}
}
