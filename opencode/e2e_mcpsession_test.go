//go:build unix

package opencode_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// TestRealOpencodeReopensItsMCPSessionAfterTheServerClosedItAsIdle pins
// what the MCP server's idle limit relies on: opencode (1.18) answers the
// 404 of a session the server closed by opening a new one on its next
// use, by itself, so no one has to ask it to reconnect.
func TestRealOpencodeReopensItsMCPSessionAfterTheServerClosedItAsIdle(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{tuneMCP: func(o *mcp.Options) { o.SessionIdle = 2 * time.Second }})
	_, api := st.readyAgent(t, ctx, "a")
	ses := api.newSession()
	statusTurn := func(what string) {
		t.Helper()
		n := len(model.Requests())
		if err := api.prompt(ctx, ses, `CALL codehydra_workspace_get_status {}`); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, r := range model.Requests()[n:] {
			if r.LastRole == "tool" && strings.Contains(r.LastText, `"isDirty"`) {
				return
			}
		}
		t.Fatalf("%s: the get_status result never reached the model; requests: %+v", what, model.Requests()[n:])
	}

	statusTurn("a turn with a live session")
	testenv.WaitFor(t, "the idle MCP session to be closed", 30*time.Second, func() bool { return st.srv.Sessions() == 0 })
	statusTurn("a turn after the session was closed")
	if n := st.srv.Sessions(); n != 1 {
		t.Fatalf("%d MCP sessions after the agent's new call, want its new one", n)
	}
	var m map[string]struct {
		Status string `json:"status"`
	}
	if err := api.do(ctx, http.MethodGet, "/mcp", nil, &m); err != nil || m["codehydra"].Status != "connected" {
		t.Fatalf("GET /mcp = %v, %v; want codehydra connected", m, err)
	}
}
