package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// A workspace's sessions end with it, and no workspace may take every
// session place. Real server, real HTTP, the real go-sdk client.

func TestAWorkspacesSessionsCloseAsSoonAsItIsDeleted(t *testing.T) {
	h := newHarness(t)
	a, b := h.create("a"), h.create("b")
	sa := h.sessionAs(h.tokenOf(a.Path), a.Path)
	sb := h.sessionAs(h.tokenOf(b.Path), b.Path)
	user := h.session("")
	for _, cs := range []*sdk.ClientSession{sa, sb} {
		okJSON(t, call(t, cs, ToolGetStatus, nil), new(statusOutput))
	}
	if n := h.srv.Sessions(); n != 3 {
		t.Fatalf("%d sessions, want 3", n)
	}
	if err := h.mgr.Delete(context.Background(), a.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Well before the idle timeout (30 min by default).
	waitFor(t, "A's session to be closed", func() bool { return h.srv.Sessions() == 2 })
	if _, err := sa.CallTool(context.Background(), &sdk.CallToolParams{Name: ToolGetStatus, Arguments: map[string]any{}}); err == nil {
		t.Fatal("a call on the deleted workspace's session succeeded")
	}
	okJSON(t, call(t, sb, ToolGetStatus, nil), new(statusOutput))
	okJSON(t, call(t, user, ToolProjectList, nil), new(ProjectList))
}

func TestRemovingAProjectClosesTheSessionsOfItsWorkspaces(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	sa := h.sessionAs(h.tokenOf(a.Path), a.Path)
	okJSON(t, call(t, sa, ToolGetStatus, nil), new(statusOutput))
	user := h.session("")
	if err := h.mgr.RemoveProject(context.Background(), h.project); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removed project's workspace session to be closed", func() bool { return h.srv.Sessions() == 1 })
	okJSON(t, call(t, user, ToolProjectList, nil), new(ProjectList))
}

// openAs sends an initialize without a session with token and header, as
// a client opening one, and returns the status and the JSON-RPC error
// message of a refusal.
func (h *harness) openAs(token, wsPath string) (int, string) {
	h.t.Helper()
	hdr := mcpHeaders()
	hdr.Set("Authorization", "Bearer "+token)
	if wsPath != "" {
		hdr.Set(WorkspaceHeader, wsPath)
	}
	resp := h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(initializeBody))
	body, _ := io.ReadAll(resp.Body)
	var rpc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &rpc)
	return resp.StatusCode, rpc.Error.Message
}

func TestOneWorkspaceCannotTakeEverySessionPlace(t *testing.T) {
	const limit = 8 // a workspace may hold a quarter: 2
	h := newHarness(t, func(o *Options) { o.MaxSessions = limit })
	a, b := h.create("a"), h.create("b")
	tokA, tokB := h.tokenOf(a.Path), h.tokenOf(b.Path)
	for i := range 2 {
		if code, msg := h.openAs(tokA, a.Path); code != http.StatusOK {
			t.Fatalf("A's session %d: %d %s", i+1, code, msg)
		}
	}
	// Another header or none does not make A someone else.
	for _, header := range []string{a.Path, "", b.Path} {
		code, msg := h.openAs(tokA, header)
		if code != http.StatusServiceUnavailable || !strings.Contains(msg, "this workspace has too many MCP sessions open") || !strings.Contains(msg, "2") {
			t.Fatalf("A's third session, header %q: %d %q, want 503 naming the workspace's share", header, code, msg)
		}
	}
	if code, msg := h.openAs(tokB, b.Path); code != http.StatusOK {
		t.Fatalf("B's first session while A holds its share: %d %s", code, msg)
	}
	// The user may use the rest of the cap.
	for i := range limit - 3 {
		if code, msg := h.openAs(h.token.Value(), ""); code != http.StatusOK {
			t.Fatalf("the user's session %d: %d %s", i+1, code, msg)
		}
	}
	if code, msg := h.openAs(h.token.Value(), ""); code != http.StatusServiceUnavailable || !strings.Contains(msg, "mcpMaxSessions") {
		t.Fatalf("a session past the whole cap: %d %q", code, msg)
	}
	if n := h.srv.Sessions(); n != limit {
		t.Fatalf("%d sessions open, want %d", n, limit)
	}
}

func TestTheWorkspaceShareOfSessions(t *testing.T) {
	for _, c := range []struct{ max, perWorkspace, want int }{
		{100, 0, 25},
		{8, 0, 2},
		{3, 0, 1},
		{1, 0, 1},
		{10, 4, 4},
		{10, 50, 10},
	} {
		o, err := Options{Token: &Token{}, Workspaces: workspace.NewManager(workspace.Options{}), MaxSessions: c.max, MaxSessionsPerWorkspace: c.perWorkspace}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if o.MaxSessionsPerWorkspace != c.want {
			t.Errorf("MaxSessions %d, MaxSessionsPerWorkspace %d: a workspace may hold %d, want %d", c.max, c.perWorkspace, o.MaxSessionsPerWorkspace, c.want)
		}
	}
}
