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
