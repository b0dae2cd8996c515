package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// recordingElicitor accepts every question with a name and records it.
type recordingElicitor struct {
	mu    sync.Mutex
	asked []Question
}

func (r *recordingElicitor) Elicit(_ context.Context, q Question) (*sdk.ElicitResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, q)
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

// askTools adds "ask", which asks its client for a name in its result
// (the multi round-trip protocol) and answers with what it got.
func askTools(srv *sdk.Server) {
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["q"].(*sdk.ElicitResult); ok {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%s %v", r.Action, r.Content["name"])}}}, nil
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"q": &sdk.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil
	})
}

func TestAQuestionDuringAWorkspacesCallNamesTheServerAndTheWorkspace(t *testing.T) {
	g := newFakeGateway(t)
	g.add("every", askTools)
	tray := &recordingElicitor{}
	h := newHarness(t, withGateway(g), func(o *Options) { o.Elicitor = tray })
	a := h.create("a")
	res := call(t, h.sessionAs(h.tokenOf(a.Path), ""), "every__ask", nil)
	if res.IsError || !strings.Contains(text(t, res), "accept Ada") {
		t.Fatalf("the tray's answer did not reach the server: %+v", res)
	}
	tray.mu.Lock()
	defer tray.mu.Unlock()
	if len(tray.asked) != 1 || tray.asked[0].Server != "every" || tray.asked[0].Workspace != a.Path || tray.asked[0].Params.Message != "Your name?" {
		t.Fatalf("the tray was asked %+v, want one question of every for %s", tray.asked, a.Path)
	}
}
