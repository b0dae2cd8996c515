//go:build unix

package opencode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/gateway"
	"codehydra/internal/fakemodel"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// TestRealOpencodeAgentCallsAGatewayToolThroughItsCodehydraEntry: the
// user's own MCP server (the real server-everything, over stdio) is
// configured once in CodeHydra's gateway, and the real opencode agent of a
// workspace, whose config names no server but codehydra, is offered its
// tools under that one entry and calls one in a turn of the fake model:
// the call reaches server-everything, its answer comes back into the
// session, and the audit log names the server and the caller's workspace.
func TestRealOpencodeAgentCallsAGatewayToolThroughItsCodehydraEntry(t *testing.T) {
	bin := testenv.RealOpencode(t)
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	st := newRealStack(t, ctx, bin, model, realStackOptions{tuneMCP: func(o *mcp.Options) {
		gw := gateway.New(gateway.Options{
			Servers:     map[string]settings.MCPServer{"everything": {Command: every}},
			StopTimeout: time.Second,
		})
		// Registered before the stack's own clean-up, so it runs after
		// the MCP server has stopped, as serve orders it.
		t.Cleanup(func() { _ = gw.Close() })
		o.Gateway = gw
		o.AuditPath = audit
	}})
	ws, api := st.readyAgent(t, ctx, "a")

	ses := api.newSession()
	const tool = "codehydra_everything__echo"
	n := len(model.Requests())
	if err := api.prompt(ctx, ses, `CALL `+tool+` {"message":"hello from the agent"}`); err != nil {
		t.Fatalf("the agent's turn: %v", err)
	}
	reqs := model.Requests()[n:]
	// The turn's requests offer the agent's tools (a title request
	// offers none).
	if !slices.ContainsFunc(reqs, func(r fakemodel.Request) bool { return slices.Contains(r.Tools, tool) }) {
		t.Fatalf("the model was not offered %s; requests: %+v", tool, reqs)
	}
	if !slices.ContainsFunc(reqs, func(r fakemodel.Request) bool { return r.ToolCall == tool }) {
		t.Fatalf("the model never called %s; requests: %+v", tool, reqs)
	}
	const echoed = "Echo: hello from the agent"
	if got := toolResult(model, n, echoed); got == "" {
		t.Fatalf("server-everything's answer never reached the model; requests: %+v", reqs)
	}
	if out := toolOutputs(t, api, ctx, ses); !slices.ContainsFunc(out, func(s string) bool { return strings.Contains(s, echoed) }) {
		t.Fatalf("the session's tool parts %q lack %q", out, echoed)
	}

	line := auditLine(t, audit, "everything__echo")
	if line.Server != "everything" || line.Workspace != ws.Path || line.Outcome != "ok" || line.Caller == "" {
		t.Fatalf("audit line %+v, want server everything, workspace %s, outcome ok", line, ws.Path)
	}
	if data, _ := os.ReadFile(audit); strings.Contains(string(data), "hello from the agent") {
		t.Fatalf("the audit log holds an argument's value:\n%s", data)
	}
}

// toolOutputs reads the session's messages from the agent's server and
// returns the output of each tool part in them.
func toolOutputs(t *testing.T, api agentAPI, ctx context.Context, session string) []string {
	t.Helper()
	var msgs []struct {
		Parts []struct {
			Type  string `json:"type"`
			Tool  string `json:"tool"`
			State struct {
				Status string `json:"status"`
				Output string `json:"output"`
			} `json:"state"`
		} `json:"parts"`
	}
	if err := api.do(ctx, http.MethodGet, "/session/"+session+"/message", nil, &msgs); err != nil {
		t.Fatalf("read the session's messages: %v", err)
	}
	var out []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == "tool" {
				out = append(out, p.Tool+" ("+p.State.Status+"): "+p.State.Output)
			}
		}
	}
	return out
}

// auditEntry is what a test reads of an audit.jsonl line.
type auditEntry struct {
	Caller    string `json:"caller"`
	Workspace string `json:"workspace"`
	Tool      string `json:"tool"`
	Server    string `json:"server"`
	Outcome   string `json:"outcome"`
}

// auditLine waits for the audit log's line of tool and returns it.
func auditLine(t *testing.T, path, tool string) auditEntry {
	t.Helper()
	var found auditEntry
	testenv.WaitFor(t, "the audit line of "+tool, 10*time.Second, func() bool {
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e auditEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Tool == tool {
				found = e
				return true
			}
		}
		return false
	})
	return found
}
