package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"codehydra/workspace"
)

// fixedAgents reports one agent status for every workspace.
type fixedAgents struct {
	mu sync.Mutex
	st workspace.AgentStatus
}

func (a *fixedAgents) set(st workspace.AgentStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st = st
}

func (a *fixedAgents) AgentStatus(string) workspace.AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st
}

func (a *fixedAgents) StopAgent(context.Context, string) error { return nil }

func TestGetStatusSaysAnAgentRetriesWithOpencodesMessageAndAttempt(t *testing.T) {
	agents := &fixedAgents{}
	h := newHarnessWith(t, agents)
	ws := h.create("stalled")
	agents.set(workspace.AgentStatus{
		Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1},
		State: workspace.AgentStateReady, Port: 4096,
		Retry: workspace.AgentRetry{Sessions: 1, Attempt: 3, Message: "Cannot connect to API", Next: 1767225600123},
	})
	var st struct {
		Agent map[string]json.RawMessage `json:"agent"`
	}
	okJSON(t, call(t, h.session(ws.Path), ToolGetStatus, nil), &st)
	// The fields of before stay as they were: a retrying session is busy.
	for key, want := range map[string]string{
		"type":   `"busy"`,
		"counts": `{"idle":0,"busy":1,"total":1}`,
		"state":  `"ready"`,
		"retry":  `{"sessions":1,"attempt":3,"message":"Cannot connect to API","next":1767225600123}`,
	} {
		if got := st.Agent[key]; got == nil || !jsonEqual(t, got, []byte(want)) {
			t.Errorf("agent.%s = %s, want %s", key, string(got), want)
		}
	}

	// An agent that does not retry has no retry key.
	agents.set(workspace.AgentStatus{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}})
	st.Agent = nil
	okJSON(t, call(t, h.session(ws.Path), ToolGetStatus, nil), &st)
	if r, ok := st.Agent["retry"]; ok {
		t.Errorf("agent.retry = %s for an agent that does not retry", r)
	}
}

func TestStatusAndListReportWhatTheAgentCostSoFar(t *testing.T) {
	agents := &fixedAgents{}
	h := newHarnessWith(t, agents)
	ws := h.create("spender")
	agents.set(workspace.AgentStatus{
		Type: workspace.AgentIdle, Counts: workspace.AgentCounts{Idle: 1, Total: 1}, State: workspace.AgentStateReady,
		Usage:      workspace.AgentUsage{InputTokens: 123456, OutputTokens: 789, Cost: 0.4215},
		UsageToday: workspace.AgentUsage{InputTokens: 1, OutputTokens: 1, Cost: 0.01},
	})
	want := `{"inputTokens":123456,"outputTokens":789,"cost":0.4215}`
	var st struct {
		Agent map[string]json.RawMessage `json:"agent"`
	}
	okJSON(t, call(t, h.session(ws.Path), ToolGetStatus, nil), &st)
	if got := st.Agent["usage"]; got == nil || !jsonEqual(t, got, []byte(want)) {
		t.Errorf("workspace_get_status: agent.usage = %s, want %s", got, want)
	}

	var list struct {
		Workspaces []struct {
			Name  string                     `json:"name"`
			Agent map[string]json.RawMessage `json:"agent"`
		} `json:"workspaces"`
	}
	okJSON(t, call(t, h.session(ws.Path), ToolList, nil), &list)
	if len(list.Workspaces) != 1 || list.Workspaces[0].Name != "spender" {
		t.Fatalf("workspace_list = %+v, want spender alone", list.Workspaces)
	}
	if got := list.Workspaces[0].Agent["usage"]; got == nil || !jsonEqual(t, got, []byte(want)) {
		t.Errorf("workspace_list: agent.usage = %s, want %s", got, want)
	}

	// An agent that used nothing says so with zeros, not by leaving usage out.
	agents.set(workspace.AgentStatus{Type: workspace.AgentNone})
	st.Agent = nil
	okJSON(t, call(t, h.session(ws.Path), ToolGetStatus, nil), &st)
	if got := st.Agent["usage"]; got == nil || !jsonEqual(t, got, []byte(`{"inputTokens":0,"outputTokens":0,"cost":0}`)) {
		t.Errorf("agent.usage of an agent that used nothing = %s", got)
	}
}
