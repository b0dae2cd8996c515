//go:build unix

package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// readyAgent starts the agent of a new worktree under s and waits until it
// is ready; it returns the workspace and the agent's port.
func readyAgent(t *testing.T, s *Supervisor) (workspace.Workspace, int) {
	t.Helper()
	ws := worktreeWorkspace(t)
	s.Start(ws)
	return ws, waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second).Port
}

// stepContext bounds a test's hibernates and wakes.
func stepContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// hibernate hibernates the agent of the workspace at path, or fails the
// test.
func hibernate(t *testing.T, s *Supervisor, path string) {
	t.Helper()
	if err := s.Hibernate(stepContext(t), path); err != nil {
		t.Fatal(err)
	}
}

// makeBusy makes the agent listening on port report its session ses_1
// busy, and waits until s shows it busy.
func makeBusy(t *testing.T, s *Supervisor, path string, port int) {
	t.Helper()
	testenv.WaitFor(t, "event stream connected", 5*time.Second, func() bool { return eventClients(t, port) > 0 })
	emit(t, port, false, EventSessionCreated, map[string]any{"sessionID": "ses_1", "info": map[string]any{"id": "ses_1"}})
	emit(t, port, false, EventSessionStatus, status("ses_1", "busy"))
	testenv.WaitFor(t, "busy", 5*time.Second, func() bool { return s.AgentStatus(path).Type == workspace.AgentBusy })
}

func TestHibernateStopsTheProcessKeepsTheWorkspaceAndWakeBringsItBack(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws, _ := readyAgent(t, s)
	leader := agentRecords(t, f.agentsDir)[0].PID

	ctx := stepContext(t)
	hibernate(t, s, ws.Path)
	if !processGone(leader) {
		t.Error("the agent's process runs after Hibernate returned")
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
	st := s.AgentStatus(ws.Path)
	if st.State != workspace.AgentStateHibernated || st.Port != 0 || st.Detail == "" {
		t.Errorf("status after Hibernate = %+v", st)
	}
	if !s.Hibernated(ws.Path) {
		t.Error("Hibernated = false")
	}
	if _, ok := s.OpencodePort(ws.Path); ok {
		t.Error("a hibernated agent has a port")
	}
	if _, ok := workspace.HibernatedSince(ws.Path); !ok {
		t.Error("no record in the worktree's admin folder")
	}
	if testenv.Exists(ws.Path) == false {
		t.Error("the worktree went")
	}
	if err := s.Hibernate(ctx, ws.Path); err != nil {
		t.Errorf("hibernating a hibernated agent: %v", err)
	}

	if err := s.Wake(ctx, ws.Path); err != nil {
		t.Fatal(err)
	}
	if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady || st.Port == 0 {
		t.Errorf("status after Wake = %+v", st)
	}
	if _, ok := workspace.HibernatedSince(ws.Path); ok {
		t.Error("the record stays after Wake")
	}
	if err := s.Wake(ctx, ws.Path); err != nil {
		t.Errorf("waking a ready agent: %v", err)
	}
}

func TestAHibernatedWorkspaceStaysHibernatedAtTheNextStart(t *testing.T) {
	f := newFixture(t)
	ws := worktreeWorkspace(t)
	first := NewSupervisor(f.options())
	first.Start(ws)
	waitState(t, first, ws.Path, workspace.AgentStateReady, 10*time.Second)
	hibernate(t, first, ws.Path)
	if err := first.StopAll(stepContext(t)); err != nil {
		t.Fatal(err)
	}

	again := f.start(f.options())
	again.Start(ws)
	if st := again.AgentStatus(ws.Path); st.State != workspace.AgentStateHibernated {
		t.Fatalf("status at the next start = %+v", st)
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("an agent started: %v", recs)
	}
	again.RestartAll()
	if st := again.AgentStatus(ws.Path); st.State != workspace.AgentStateHibernated {
		t.Errorf("RestartAll woke it: %+v", st)
	}
	// Restart (the tray's, workspace_restart_agent's) wakes it.
	if err := again.Restart(ws.Path); err != nil {
		t.Fatal(err)
	}
	waitState(t, again, ws.Path, workspace.AgentStateReady, 10*time.Second)
	if _, ok := workspace.HibernatedSince(ws.Path); ok {
		t.Error("the record stays after Restart")
	}
}

func TestAPromptForAHibernatedAgentWakesItAndIsDelivered(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws, _ := readyAgent(t, s)
	hibernate(t, s, ws.Path)
	d, err := s.SendReview(ws.Path, workspace.Review{Summary: "rename the flag"})
	if err != nil {
		t.Fatal(err)
	}
	got := waitReview(t, s, ws.Path, d.ID)
	if got.State != workspace.DeliveryDelivered {
		t.Fatalf("review = %+v", got)
	}
	if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady {
		t.Errorf("status = %+v", st)
	}
}

func TestWakeFailsWhenTheAgentCannotStart(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws, _ := readyAgent(t, s)
	hibernate(t, s, ws.Path)
	ctx := stepContext(t)
	// The config file went: the agent does not start, and says why.
	if err := os.Remove(f.config); err != nil {
		t.Fatal(err)
	}
	err := s.Wake(ctx, ws.Path)
	if workspace.CodeOf(err) != workspace.CodeConflict {
		t.Fatalf("Wake = %v, want a conflict saying why", err)
	}
	if err := s.Wake(ctx, filepath.Join(f.dir, "nowhere")); workspace.CodeOf(err) != workspace.CodeConflict {
		t.Errorf("Wake of a workspace without agent = %v", err)
	}
	if err := s.Hibernate(ctx, filepath.Join(f.dir, "nowhere")); workspace.CodeOf(err) != workspace.CodeConflict {
		t.Errorf("Hibernate of a workspace without agent = %v", err)
	}
}

func TestAHibernatedAgentFreesItsPlaceOfMaxAgents(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.MaxAgents = 1
	s := f.start(o)
	a, _ := readyAgent(t, s)
	b := worktreeWorkspace(t)
	s.Start(b)
	if st := s.AgentStatus(b.Path); st.State != workspace.AgentStateFailed {
		t.Fatalf("second agent past maxAgents = %+v", st)
	}
	hibernate(t, s, a.Path)
	waitState(t, s, b.Path, workspace.AgentStateReady, 10*time.Second)
	// Waking a now finds no place: it says so rather than waiting.
	if err := s.Wake(stepContext(t), a.Path); workspace.CodeOf(err) != workspace.CodeConflict {
		t.Errorf("Wake past maxAgents = %v", err)
	}
}

func TestIdleAgentsAreHibernatedAfterTheSetTimeAndBusyOnesAreNot(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	var after atomic.Int64 // the setting, changed while it runs
	o.HibernateAfter = func() time.Duration { return time.Duration(after.Load()) }
	o.IdleCheck = 20 * time.Millisecond
	s := f.start(o)
	idle, _ := readyAgent(t, s)
	busy, port := readyAgent(t, s)
	makeBusy(t, s, busy.Path, port)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.HibernateIdle(ctx) }()
	defer func() { cancel(); <-done }()

	// Off (0) by default: nothing happens.
	time.Sleep(100 * time.Millisecond)
	if st := s.AgentStatus(idle.Path); st.State != workspace.AgentStateReady {
		t.Fatalf("hibernated while the setting is off: %+v", st)
	}
	after.Store(int64(200 * time.Millisecond))
	waitState(t, s, idle.Path, workspace.AgentStateHibernated, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if st := s.AgentStatus(busy.Path); st.State != workspace.AgentStateReady {
		t.Errorf("a busy agent was hibernated: %+v", st)
	}
	emit(t, port, false, EventSessionStatus, status("ses_1", "idle"))
	waitState(t, s, busy.Path, workspace.AgentStateHibernated, 10*time.Second)
}

func TestWakeWaitsForAnAgentThatIsStarting(t *testing.T) {
	f := newFixture(t, "FAKEOC_MODE=slow=300ms")
	s := f.start(f.options())
	ws := worktreeWorkspace(t)
	s.Start(ws)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Wake(ctx, ws.Path); err != nil {
		t.Fatal(err)
	}
	if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady {
		t.Errorf("Wake returned before ready: %+v", st)
	}
	short, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if err := s.Hibernate(ctx, ws.Path); err != nil {
		t.Fatal(err)
	}
	if err := s.Wake(short, ws.Path); workspace.CodeOf(err) != workspace.CodeTimeout {
		t.Errorf("Wake past its deadline = %v", fmt.Sprint(err))
	}
}

func TestUsageIsKeptWhileHibernatedAndAcrossTheWake(t *testing.T) {
	now := time.Now().UnixMilli()
	// What the workspace's sessions cost so far; the fake serves it at
	// each start, as opencode reads it from its storage.
	events, err := json.Marshal([]any{
		map[string]any{"type": EventSessionUpdated, "properties": map[string]any{"sessionID": "ses_0", "info": map[string]any{
			"id": "ses_0", "cost": 2, "tokens": tok(200, 20, 0, 0, 0), "time": map[string]any{"created": now, "updated": now}}}},
		map[string]any{"type": EventMessageUpdated, "properties": assistant("msg_0", "ses_0", 2, tok(200, 20, 0, 0, 0), now)},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "FAKEOC_EVENTS="+string(events))
	s := f.start(f.options())
	ws := worktreeWorkspace(t)
	s.Start(ws)
	want := workspace.AgentUsage{InputTokens: 200, OutputTokens: 20, Cost: 2}
	testenv.WaitFor(t, "the usage read", 10*time.Second, func() bool { return s.AgentStatus(ws.Path).Usage == want })
	from := len(f.changes.published(ws.Path))

	hibernate(t, s, ws.Path)
	if st := s.AgentStatus(ws.Path); st.Usage != want || st.UsageToday != want {
		t.Errorf("hibernated: usage %+v, today %+v; want %+v", st.Usage, st.UsageToday, want)
	}
	if err := s.Wake(stepContext(t), ws.Path); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the usage read again", 10*time.Second, func() bool { return s.AgentStatus(ws.Path).Usage == want })
	// Not even for a moment (starting, ready before its sessions were
	// read) did it fall back to nothing.
	for _, st := range f.changes.published(ws.Path)[from:] {
		if st.Usage != want {
			t.Errorf("published while hibernating or waking: state %s, usage %+v; want %+v", st.State, st.Usage, want)
		}
	}
	if spent := s.UsageSpent(); spent != (workspace.AgentUsage{}) {
		t.Errorf("spent = %+v: the usage read again at the wake counted as spending", spent)
	}
}

func TestAReviewForAHibernatedAgentWithoutAPlaceWaitsForOne(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.MaxAgents = 1
	s := f.start(o)
	b, _ := readyAgent(t, s)
	hibernate(t, s, b.Path)
	a, _ := readyAgent(t, s)

	// b wakes into the queue for maxAgents: the review waits with it.
	d, err := s.SendReview(b.Path, workspace.Review{Summary: "rename the flag"})
	if err != nil {
		t.Fatal(err)
	}
	if d.State != workspace.DeliveryPending {
		t.Fatalf("review while its agent waits for a place = %+v", d)
	}
	if st := s.AgentStatus(b.Path); st.State != workspace.AgentStateFailed || !s.waitingForPlace(filepath.Clean(b.Path)) {
		t.Fatalf("b = %+v, want it waiting for a place", st)
	}
	if got := s.Reviews(b.Path); len(got) != 1 || got[0].State != workspace.DeliveryPending {
		t.Fatalf("reviews while b waits = %+v", got)
	}
	if err := s.StopAgent(stepContext(t), a.Path); err != nil {
		t.Fatal(err)
	}
	if got := waitReview(t, s, b.Path, d.ID); got.State != workspace.DeliveryDelivered {
		t.Fatalf("review after b got a place = %+v", got)
	}
}

// A Wake while a Hibernate still stops the agent (here one that ignores
// SIGTERM, so it goes only at the SIGKILL after StopTimeout) waits for it:
// no second opencode in the worktree, and its place of maxAgents is free.
func TestWakeDuringAHibernateWaitsUntilTheOldAgentIsGone(t *testing.T) {
	f := newFixture(t, "FAKEOC_IGNORE_TERM=1")
	o := f.options()
	o.MaxAgents = 1
	s := f.start(o)
	ws, _ := readyAgent(t, s)
	leader := agentRecords(t, f.agentsDir)[0].PID

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if err := s.Hibernate(short, ws.Path); err == nil {
		t.Fatal("Hibernate returned before an agent that ignores SIGTERM was gone")
	}
	if processGone(leader) {
		t.Fatal("the old agent is gone already; the test shows nothing")
	}
	if err := s.Wake(stepContext(t), ws.Path); err != nil {
		t.Fatal(err)
	}
	if !processGone(leader) {
		t.Error("Wake started a second agent while the old one still ran")
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 1 || recs[0].PID == leader {
		t.Errorf("records after Wake: %v", recs)
	}
}

// The idle check decides again at the moment it hibernates: an agent that
// became busy (or active) since it was found idle keeps running.
func TestIdleHibernationChecksAgainThatTheAgentIsIdle(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws, port := readyAgent(t, s)
	ctx := stepContext(t)
	if err := s.hibernate(ctx, ws.Path, time.Hour); err != nil {
		t.Fatal(err)
	}
	if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady {
		t.Fatalf("hibernated though active just now: %+v", st)
	}
	makeBusy(t, s, ws.Path, port)
	if err := s.hibernate(ctx, ws.Path, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady {
		t.Fatalf("a busy agent was hibernated: %+v", st)
	}
	if _, ok := workspace.HibernatedSince(ws.Path); ok {
		t.Error("the record stays though the agent was not hibernated")
	}
	emit(t, port, false, EventSessionStatus, status("ses_1", "idle"))
	testenv.WaitFor(t, "idle", 5*time.Second, func() bool { return s.AgentStatus(ws.Path).Type == workspace.AgentIdle })
	if err := s.hibernate(ctx, ws.Path, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if !s.Hibernated(ws.Path) {
		t.Errorf("an idle agent was not hibernated: %+v", s.AgentStatus(ws.Path))
	}
}

func TestOnHibernateHearsOfEachHibernationOnceTheAgentIsGone(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	var after atomic.Int64
	o.HibernateAfter = func() time.Duration { return time.Duration(after.Load()) }
	o.IdleCheck = 20 * time.Millisecond
	leaders := map[string]int{}
	heard := make(chan string, 4)
	o.OnHibernate = func(_ context.Context, path string) {
		if !processGone(leaders[path]) {
			t.Errorf("OnHibernate heard of %s while its agent runs", path)
		}
		heard <- path
	}
	s := f.start(o)
	asked, idle := worktreeWorkspace(t), worktreeWorkspace(t)
	for _, ws := range []workspace.Workspace{asked, idle} {
		s.Start(ws)
		waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	}
	for _, r := range agentRecords(t, f.agentsDir) {
		leaders[r.Workspace] = r.PID
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Hibernate(ctx, asked.Path); err != nil {
		t.Fatal(err)
	}
	if got := <-heard; got != asked.Path {
		t.Fatalf("OnHibernate heard %s, want %s", got, asked.Path)
	}
	idleCtx, stopIdle := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.HibernateIdle(idleCtx) }()
	defer func() { stopIdle(); <-done }()
	after.Store(int64(100 * time.Millisecond))
	select {
	case got := <-heard:
		if got != idle.Path {
			t.Fatalf("OnHibernate heard %s, want the idle %s", got, idle.Path)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnHibernate did not hear of the idle hibernation")
	}
}
