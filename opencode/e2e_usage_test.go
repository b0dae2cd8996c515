package opencode_test

import (
	"context"
	"math"
	"testing"
	"time"

	"codehydra/internal/fakemodel"
	"codehydra/internal/testenv"
	"codehydra/opencode"
	"codehydra/workspace"
)

// The fake model reports 10 prompt and 5 completion tokens for each
// answer; at these prices (US dollars per million tokens, as opencode's
// provider configuration takes them) that costs 1 + 1 dollars.
const (
	inputPrice    = 100_000
	outputPrice   = 200_000
	costPerAnswer = 2.0
)

func TestRealOpencodeUsageComesFromTheSessions(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := &fakemodel.Server{}
	if err := model.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{tune: func(o *opencode.SupervisorOptions) {
		o.ReadyTimeout = 2 * time.Minute // opencode starts slowly on a loaded machine
	}, config: map[string]any{
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"options": map[string]any{"baseURL": model.BaseURL(), "apiKey": "x"},
			"models": map[string]any{"m": map[string]any{"tool_call": true,
				"cost": map[string]any{"input": inputPrice, "output": outputPrice}}},
		}},
	}})
	sup := st.sup

	wsA, err := st.mgr.Create(ctx, workspace.CreateOptions{ProjectPath: st.project, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	wsB, err := st.mgr.Create(ctx, workspace.CreateOptions{ProjectPath: st.project, Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range []workspace.Workspace{wsA, wsB} {
		sup.Start(ws)
		testenv.WaitFor(t, "agent of "+ws.Name+" ready", 3*time.Minute, func() bool {
			return sup.AgentStatus(ws.Path).State == workspace.AgentStateReady
		})
	}
	// The first read is over once the watcher sees sessions; let it read
	// the empty workspace before the turns, so that they count as spent.
	api := serverAPI(t, sup, wsA.Path)
	ses := api.newSession()
	testenv.WaitFor(t, "A's session seen", 30*time.Second, func() bool { return sup.AgentStatus(wsA.Path).Counts.Total == 1 })

	for range 2 {
		if err := api.prompt(ctx, ses, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	want := workspace.AgentUsage{InputTokens: 20, OutputTokens: 10, Cost: 2 * costPerAnswer}
	same := func(a, b workspace.AgentUsage) bool {
		return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && math.Abs(a.Cost-b.Cost) < 1e-9
	}
	if !testenv.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		s := sup.AgentStatus(wsA.Path)
		return same(s.Usage, want) && same(s.UsageToday, want)
	}) {
		s := sup.AgentStatus(wsA.Path)
		t.Fatalf("A's usage = %+v, today %+v; want both %+v", s.Usage, s.UsageToday, want)
	}
	if got := sup.UsageSpent(); !same(got, want) {
		t.Errorf("spent = %+v, want %+v", got, want)
	}
	// The status tools read it from the manager's status.
	if s, err := st.mgr.Status(ctx, wsA.Path); err != nil || !same(s.Agent.Usage, want) {
		t.Errorf("A's workspace status: usage %+v, %v; want %+v", s.Agent.Usage, err, want)
	}
	if u := sup.AgentStatus(wsB.Path).Usage; u != (workspace.AgentUsage{}) {
		t.Errorf("B, which ran no turn, has usage %+v", u)
	}

	// A new process of A's agent reads the same sessions from opencode's
	// storage: the same usage, and no new spending.
	if err := sup.Restart(wsA.Path); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "A restarting", 30*time.Second, func() bool { return sup.AgentStatus(wsA.Path).State != workspace.AgentStateReady })
	testenv.WaitFor(t, "A ready again", 3*time.Minute, func() bool { return sup.AgentStatus(wsA.Path).State == workspace.AgentStateReady })
	if !testenv.Poll(30*time.Second, 10*time.Millisecond, func() bool { return same(sup.AgentStatus(wsA.Path).Usage, want) }) {
		t.Fatalf("A's usage after a restart = %+v, want %+v", sup.AgentStatus(wsA.Path).Usage, want)
	}
	if got := sup.UsageSpent(); !same(got, want) {
		t.Errorf("spent after a restart = %+v, want still %+v", got, want)
	}
}
