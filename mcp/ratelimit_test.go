package mcp

import (
	"context"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Every JSON-RPC method and every tool name, known or not, is limited per
// caller (docs/DESIGN.md "Trust": the caller is what its token proves).

func TestFloodOfAnyMethodIsLimitedPerCaller(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 3 })
	a, b := h.create("a"), h.create("b")
	ca := h.sessionAs(h.tokenOf(a.Path), a.Path)
	cb := h.sessionAs(h.tokenOf(b.Path), b.Path)
	user := h.session(a.Path)
	ctx := context.Background()

	for i := range 3 {
		if _, err := ca.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list %d within the burst: %v", i, err)
		}
	}
	if _, err := ca.ListTools(ctx, nil); err == nil || !strings.Contains(err.Error(), string(workspace.CodeRateLimited)) {
		t.Fatalf("tools/list past the burst: %v, want a rate-limited error", err)
	}
	for name, cs := range map[string]*sdk.ClientSession{"another workspace": cb, "the user": user} {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list of %s was limited by a's flood: %v", name, err)
		}
	}
	for i := range 3 {
		if err := ca.Ping(ctx, nil); err != nil {
			t.Fatalf("ping %d within the burst: %v", i, err)
		}
	}
	if err := ca.Ping(ctx, nil); err == nil || !strings.Contains(err.Error(), string(workspace.CodeRateLimited)) {
		t.Fatalf("ping past the burst: %v, want a rate-limited error", err)
	}
}

func TestCallsOfUnknownToolsShareTheCallersBucket(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 3 })
	a, b := h.create("a"), h.create("b")
	ca := h.sessionAs(h.tokenOf(a.Path), a.Path)
	cb := h.sessionAs(h.tokenOf(b.Path), b.Path)
	unknown := func(cs *sdk.ClientSession, i int) (*sdk.CallToolResult, error) {
		// A new name each time: inventing names must not buy new buckets.
		return cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool_" + strconv.Itoa(i), Arguments: map[string]any{}})
	}
	for i := range 3 {
		if _, err := unknown(ca, i); err == nil || strings.Contains(err.Error(), string(workspace.CodeRateLimited)) {
			t.Fatalf("unknown tool %d within the burst: %v, want the SDK's unknown-tool error", i, err)
		}
	}
	res, err := unknown(ca, 3)
	if err != nil {
		t.Fatalf("unknown tool past the burst: %v, want a rate-limited result", err)
	}
	if code, _ := errCode(t, res); code != workspace.CodeRateLimited {
		t.Fatalf("unknown tool past the burst: %s, want rate-limited", code)
	}
	if _, err := unknown(cb, 0); err == nil || strings.Contains(err.Error(), string(workspace.CodeRateLimited)) {
		t.Fatalf("another workspace's unknown tool: %v, want the SDK's unknown-tool error", err)
	}
}

func TestToolsThatNeedNoWorkspaceAreLimitedPerCaller(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 3 })
	a, b := h.create("a"), h.create("b")
	ca := h.sessionAs(h.tokenOf(a.Path), a.Path)
	for range 3 {
		okJSON(t, call(t, ca, ToolProjectList, nil), &map[string]any{})
	}
	if code, _ := errCode(t, call(t, ca, ToolProjectList, nil)); code != workspace.CodeRateLimited {
		t.Fatalf("project_list past the burst: %s, want rate-limited", code)
	}
	for name, cs := range map[string]*sdk.ClientSession{
		"another workspace": h.sessionAs(h.tokenOf(b.Path), b.Path),
		"the user":          h.session(""),
	} {
		if res := call(t, cs, ToolProjectList, nil); res.IsError {
			t.Fatalf("project_list of %s was limited by a's calls: %s", name, text(t, res))
		}
	}
}
