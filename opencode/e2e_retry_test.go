//go:build unix

package opencode_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestRealOpencodeUnreachableModelIsReportedAsRetrying points the real
// opencode's model at a port where nothing listens: opencode retries the
// turn and says so (session.status "retry"), and the agent's status
// carries opencode's attempt and reason instead of a plain busy.
func TestRealOpencodeUnreachableModelIsReportedAsRetrying(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dead := fmt.Sprintf("http://127.0.0.1:%d/v1", testenv.FreePort(t))
	st := newRealStack(t, ctx, bin, model, realStackOptions{config: map[string]any{"provider": map[string]any{"fake": map[string]any{
		"npm":     "@ai-sdk/openai-compatible",
		"options": map[string]any{"baseURL": dead, "apiKey": "x"},
		"models":  map[string]any{"m": map[string]any{"tool_call": true}},
	}}}})
	ws, api := st.readyAgent(t, ctx, "stalled")
	session := api.newSession()
	turn := make(chan error, 1)
	go func() { turn <- api.prompt(ctx, session, "hello") }()

	var got workspace.AgentStatus
	testenv.WaitFor(t, "the agent reported retrying", 60*time.Second, func() bool {
		got = st.sup.AgentStatus(ws.Path)
		return got.Retry.Sessions == 1
	})
	if got.Retry.Attempt < 1 || !strings.Contains(got.Retry.Message, "Cannot connect") || got.Retry.Next == 0 {
		t.Errorf("retry = %+v, want opencode's attempt, its 'Cannot connect' reason and the next try", got.Retry)
	}
	if got.Type != workspace.AgentBusy || got.Counts != (workspace.AgentCounts{Busy: 1, Total: 1}) {
		t.Errorf("type %q, counts %+v; a retrying session still counts as busy", got.Type, got.Counts)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the fake model, which this agent does not use, got %d requests", n)
	}
	cancel()
	<-turn
}
