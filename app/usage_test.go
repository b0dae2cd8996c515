package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestUsageLineSaysTokensAndCostShortly(t *testing.T) {
	tests := []struct {
		u    workspace.AgentUsage
		want string
	}{
		{workspace.AgentUsage{}, ""},
		{workspace.AgentUsage{InputTokens: 950, OutputTokens: 12}, "Used 950 tokens in, 12 out"},
		{workspace.AgentUsage{InputTokens: 12_345, OutputTokens: 1_000, Cost: 0.4249}, "Used 12.3k tokens in, 1k out · $0.42"},
		{workspace.AgentUsage{InputTokens: 4_560_000, OutputTokens: 2_000_000, Cost: 12.5}, "Used 4.6M tokens in, 2M out · $12.50"},
		{workspace.AgentUsage{InputTokens: 10, OutputTokens: 5, Cost: 0.0002}, "Used 10 tokens in, 5 out · <$0.01"},
	}
	for _, tt := range tests {
		if got := UsageLine(tt.u); got != tt.want {
			t.Errorf("UsageLine(%+v) = %q, want %q", tt.u, got, tt.want)
		}
	}
}

func TestWorkspaceSubmenuShowsTheAgentsUsageFirst(t *testing.T) {
	spent := uitest.AgentIdle
	spent.Usage = workspace.AgentUsage{InputTokens: 12_345, OutputTokens: 678, Cost: 0.42}
	s := oneProject(wsState("a", spent), wsState("b", uitest.AgentIdle))
	m := BuildMenu(s, allActions(nil))

	a := find(m, "○ a (idle)")
	if a == nil || a.ChildMenu == nil {
		t.Fatalf("no submenu for a in %q", labels(m))
	}
	got := labels(a.ChildMenu)
	if want := []string{"Used 12.3k tokens in, 678 out · $0.42 (off)", "---"}; !slices.Equal(got[:2], want) {
		t.Errorf("a's submenu starts %q, want %q", got[:2], want)
	}
	b := find(m, "○ b (idle)")
	if slices.ContainsFunc(labels(b.ChildMenu), func(l string) bool { return strings.HasPrefix(l, "Used ") }) {
		t.Errorf("b, which used nothing, has a usage line: %q", labels(b.ChildMenu))
	}
}

func TestSummaryAddsWhatTheAgentsUsedToday(t *testing.T) {
	a, b := uitest.AgentIdle, uitest.AgentBusy
	a.Usage = workspace.AgentUsage{InputTokens: 90_000, OutputTokens: 9_000, Cost: 3}
	a.UsageToday = workspace.AgentUsage{InputTokens: 1_000, OutputTokens: 200, Cost: 0.3}
	b.UsageToday = workspace.AgentUsage{InputTokens: 250, OutputTokens: 50, Cost: 0.12}
	if got, want := Summary(oneProject(wsState("a", a), wsState("b", b))), "CodeHydra: 2 workspaces, 1 busy, today 1.5k tokens, $0.42"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	// A model without prices costs nothing; the tokens still count.
	a.UsageToday.Cost, b.UsageToday.Cost = 0, 0
	if got, want := Summary(oneProject(wsState("a", a))), "CodeHydra: 1 workspace, all idle, today 1.2k tokens"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestTheTooltipShowsTheDaysTotal(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	st := uitest.AgentIdle
	st.Usage = workspace.AgentUsage{InputTokens: 5_000, OutputTokens: 700, Cost: 1.25}
	st.UsageToday = st.Usage
	agents.Set(ws.Path, st)
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	want := "CodeHydra: 1 workspace, all idle, today 5.7k tokens, $1.25"
	h.waitFor("the day's total in the tooltip", func() bool {
		h.view.mu.Lock()
		defer h.view.mu.Unlock()
		return len(h.view.tooltips) > 0 && h.view.tooltips[len(h.view.tooltips)-1] == want
	})
}

func TestUntilMidnightEndsAtTheNextLocalDay(t *testing.T) {
	zone := time.FixedZone("UTC+9", 9*3600)
	for _, tt := range []struct {
		now  time.Time
		want time.Duration
	}{
		{time.Date(2026, 11, 27, 23, 59, 30, 0, zone), 30 * time.Second},
		{time.Date(2026, 11, 27, 0, 0, 0, 0, zone), 24 * time.Hour},
		{time.Date(2026, 12, 31, 12, 0, 0, 0, zone), 12 * time.Hour},
	} {
		if got := untilMidnight(tt.now); got != tt.want {
			t.Errorf("untilMidnight(%s) = %s, want %s", tt.now, got, tt.want)
		}
	}
}
