//go:build unix

package opencode_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
)

// mcpHold holds the readiness probe GET /mcp while held is set, so that a
// test can act on an agent that is up but not ready yet.
type mcpHold struct {
	mu   sync.Mutex
	held bool
}

func (h *mcpHold) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	if held && r.URL.Path == "/mcp" && r.Method == http.MethodGet {
		return nil, errors.New("held by the test")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (h *mcpHold) set(v bool) {
	h.mu.Lock()
	h.held = v
	h.mu.Unlock()
}

// childTurn is the first prompt A gives its child: set metadata.
const childTurn = `CALL codehydra_workspace_set_metadata {"key":"note","value":"from-child"}`

func TestRealOpencodeFirstPromptReachesTheNewAgentOnceAfterAKill(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := &mcpHold{}
	st := newRealStack(t, ctx, bin, model, realStackOptions{
		tune: func(o *opencode.SupervisorOptions) {
			o.HTTPClient = &http.Client{Transport: hold}
			o.BackoffMin = 100 * time.Millisecond
		},
		tuneMCP: func(o *mcp.Options) { o.Prompts = o.Agents.(mcp.Prompts) },
	})
	// As the app does: every workspace that appears gets its agent.
	events, unsubscribe := st.mgr.Subscribe()
	defer unsubscribe()
	go workspace.Follow(ctx, events, func(batch []workspace.Event) {
		for _, e := range batch {
			if e.Kind == workspace.EventWorkspaceAdded {
				st.sup.Start(e.Workspace)
			}
		}
	})

	wsA, apiA := st.readyAgent(t, ctx, "a")
	hold.set(true) // the child's agent will not get ready until released
	childPath := filepath.Join(filepath.Dir(wsA.Path), "child")
	sesA := apiA.newSession()
	args, err := json.Marshal(map[string]any{"name": "child", "initialPrompt": map[string]any{"prompt": childTurn, "agent": "build"}})
	if err != nil {
		t.Fatal(err)
	}
	create := "CALL codehydra_workspace_create " + string(args)
	if err := apiA.prompt(ctx, sesA, create); err != nil {
		t.Fatalf("A's turn: %v", err)
	}
	var answer string
	for _, r := range model.Requests() {
		if r.LastRole == "tool" && strings.Contains(r.LastText, `"name":"child"`) {
			answer = r.LastText
		}
	}
	if !strings.Contains(answer, `"prompt":{"state":"pending"}`) {
		t.Fatalf("workspace_create's answer = %q; want the child with its prompt pending", answer)
	}

	// Kill -9 the child's agent while it starts; it restarts and gets the
	// prompt then, once.
	var pid int
	testenv.WaitFor(t, "the child's agent process", 30*time.Second, func() bool {
		pid = agentPID(t, childPath)
		return pid != 0
	})
	if s := st.sup.AgentStatus(childPath); s.State == workspace.AgentStateReady {
		t.Fatalf("the child's agent is ready while held: %+v", s)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if d, ok := st.sup.PromptDelivery(childPath); !ok || d.State != workspace.DeliveryPending {
		t.Fatalf("delivery after the kill = %+v, %v; want pending", d, ok)
	}
	hold.set(false)
	st.waitReady(t, workspace.Workspace{Name: "child", Path: childPath}, pid)

	testenv.WaitFor(t, "the child's metadata", 60*time.Second, func() bool {
		md, err := st.mgr.Metadata(ctx, childPath)
		return err == nil && md["note"] == "from-child"
	})
	d, ok := st.sup.PromptDelivery(childPath)
	if !ok || d.State != workspace.DeliveryDelivered || d.SessionID == "" {
		t.Fatalf("delivery = %+v, %v; want delivered in a session", d, ok)
	}
	if got := testenv.Git(t, st.project, "config", "--get", "branch.child.codehydra.createdby"); got != wsA.Path {
		t.Errorf("child's createdBy = %q, want %q", got, wsA.Path)
	}
	if all := testenv.Git(t, st.project, "config", "--list"); strings.Contains(all, "branch.a.codehydra.note") {
		t.Errorf("A got the child's metadata:\n%s", all)
	}
	// The child ran on A's model (fake/m) with the asked agent.
	var msgs []struct {
		Info struct {
			Role  string `json:"role"`
			Agent string `json:"agent"`
			Model struct {
				ProviderID string `json:"providerID"`
				ModelID    string `json:"modelID"`
			} `json:"model"`
		} `json:"info"`
	}
	if err := serverAPI(t, st.sup, childPath).do(ctx, http.MethodGet, "/session/"+d.SessionID+"/message", nil, &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || msgs[0].Info.Role != "user" || msgs[0].Info.Agent != "build" ||
		msgs[0].Info.Model.ProviderID != "fake" || msgs[0].Info.Model.ModelID != "m" {
		t.Errorf("the child's first message = %+v; want the user's, agent build, model fake/m", msgs)
	}
	// Exactly once: give a second delivery time to show, then count.
	time.Sleep(2 * time.Second)
	n := 0
	for _, r := range model.Requests() {
		if r.ToolCall == "codehydra_workspace_set_metadata" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the model was asked the child's prompt %d times, want 1", n)
	}
}
