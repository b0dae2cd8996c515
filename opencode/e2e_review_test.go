//go:build unix

package opencode_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// TestRealOpencodeParentsReviewReachesTheChildsCurrentSession: with the
// real opencode and the fake model, A's agent reviews the child it
// created with workspace_send_review; the review reaches the child's
// current session (the one it spoke in last, not its first), once, as one
// prompt from A on the session's model, and the child's agent answers it.
func TestRealOpencodeParentsReviewReachesTheChildsCurrentSession(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{
		tuneMCP: func(o *mcp.Options) { o.Reviews = o.Agents.(mcp.Reviews) },
	})
	wsA, apiA := st.readyAgent(t, ctx, "lead")
	child, apiC := st.readyAgent(t, ctx, "child")
	// What Create records when A's agent creates the child (createdBy is
	// not writable through SetMetadata).
	testenv.Git(t, child.Path, "config", "branch."+child.Branch+".codehydra.createdBy", wsA.Path)
	older, current := apiC.newSession(), apiC.newSession()
	for _, ses := range []string{older, current} {
		if err := apiC.prompt(ctx, ses, "hello"); err != nil {
			t.Fatalf("child's turn: %v", err)
		}
	}

	args, err := json.Marshal(map[string]any{"workspace": child.Path, "summary": "Nearly there.",
		"comments": []map[string]any{{"file": "README.md", "line": 1, "text": "Say it in French."}}})
	if err != nil {
		t.Fatal(err)
	}
	n := len(model.Requests())
	if err := apiA.prompt(ctx, apiA.newSession(), "CALL codehydra_workspace_send_review "+string(args)); err != nil {
		t.Fatalf("A's review turn: %v", err)
	}
	if got := toolResult(model, n, `"comments":1`); !strings.Contains(got, `"from":"`+wsA.Path+`"`) || !strings.Contains(got, `"id":"r1"`) {
		t.Fatalf("A's workspace_send_review answered %q; requests: %+v", got, model.Requests()[n:])
	}

	var d workspace.ReviewDelivery
	testenv.WaitFor(t, "the review delivered", 30*time.Second, func() bool {
		if all := st.sup.Reviews(child.Path); len(all) == 1 {
			d = all[0]
		}
		return d.State == workspace.DeliveryDelivered
	})
	if d.SessionID != current || d.From != wsA.Path || d.Comments != 1 {
		t.Fatalf("delivery %+v, want in the child's current session %s, from A", d, current)
	}
	testenv.WaitFor(t, "the child's agent to answer the review", 60*time.Second, func() bool {
		for _, r := range model.Requests()[n:] {
			if r.LastRole == "user" && strings.Contains(r.LastText, "README.md:1\n> Say it in French.") {
				return true
			}
		}
		return false
	})
	var msgs []struct {
		Info struct {
			Role  string `json:"role"`
			Model struct {
				ProviderID string `json:"providerID"`
				ModelID    string `json:"modelID"`
			} `json:"model"`
		} `json:"info"`
		Parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := apiC.do(ctx, http.MethodGet, "/session/"+current+"/message", nil, &msgs); err != nil {
		t.Fatal(err)
	}
	reviews := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			if m.Info.Role == "user" && strings.Contains(p.Text, `from the agent of the workspace "`+wsA.Path+`"`) {
				reviews++
				if m.Info.Model.ProviderID != "fake" || m.Info.Model.ModelID != "m" {
					t.Errorf("the review ran on %+v, want the session's fake/m", m.Info.Model)
				}
			}
		}
	}
	if reviews != 1 {
		t.Fatalf("the child's current session holds the review %d times, want once: %+v", reviews, msgs)
	}
	var old []json.RawMessage
	if err := apiC.do(ctx, http.MethodGet, "/session/"+older+"/message", nil, &old); err != nil || len(old) != 2 {
		t.Fatalf("the older session has %d messages (%v), want its own turn only", len(old), err)
	}
}
