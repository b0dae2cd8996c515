package mcp

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// The hostile battery's rows for the trust cases (docs/DESIGN.md "Trust"): a
// workspace's own token aimed at what is not its own. The separate trust
// tests (trust_test.go, ratelimit_test.go) show each case at length; here
// each is one more request that must be refused, cleanly and in time.

// hostileCheck is the battery's check of one reply.
type hostileCheck func(t *testing.T, name string, r reply, want refusal)

// hostileWorkspaceTokens sends, with ws's token, requests that name the
// other workspace (by path, with a trailing slash, through a symlink) or
// add and remove projects. The battery checks afterwards that nothing of
// other's changed.
func hostileWorkspaceTokens(t *testing.T, h *harness, ws, other workspace.Workspace, check hostileCheck) {
	link := filepath.Join(t.TempDir(), "link-to-other")
	if err := os.Symlink(other.Path, link); err != nil {
		t.Fatal(err)
	}
	hdr := h.rawSessionAs(h.tokenOf(ws.Path))
	tools := []struct{ name, args string }{
		{ToolGetStatus, `{}`}, {ToolGetMetadata, `{}`}, {ToolSetMetadata, `{"key":"note","value":"hijacked"}`},
		{ToolSetMetadata, `{"key":"note","value":null}`}, {ToolGetOpencodePort, `{}`}, {ToolDelete, `{}`},
	}
	headers := []struct{ name, path string }{
		{"another workspace", other.Path},
		{"another workspace with a trailing slash", other.Path + "/"},
		{"a symlink to another workspace", link},
	}
	id := 5000
	for _, hd := range headers {
		for _, tool := range tools {
			hh := hdr.Clone()
			hh.Set(WorkspaceHeader, hd.path)
			id++
			check(t, "workspace token, header naming "+hd.name+" / "+tool.name,
				h.send(http.MethodPost, hh, strings.NewReader(toolCall(id, tool.name, tool.args))), refusedForbid)
		}
	}
	elsewhere := t.TempDir()
	for _, c := range []struct{ name, tool, path string }{
		{"workspace token: project_add", ToolProjectAdd, elsewhere},
		{"workspace token: project_add of its own project", ToolProjectAdd, h.project},
		{"workspace token: project_remove", ToolProjectRemove, h.project},
	} {
		id++
		check(t, c.name, h.send(http.MethodPost, hdr, strings.NewReader(toolCall(id, c.tool, `{"path":"`+c.path+`"}`))), refusedForbid)
	}
	h.waitBackground()
	if ps := h.mgr.Projects(); len(ps) != 1 || ps[0].Path != h.project {
		t.Errorf("projects after the refused calls: %v", ps)
	}
}

// hostileGoneAndLimited runs on a harness of its own, with a burst of 3:
// the token of a deleted workspace, and calls of unknown tools, which
// share one bucket of the caller's whatever names they invent.
func hostileGoneAndLimited(t *testing.T, check hostileCheck) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 3 })
	gone, live := h.create("gone"), h.create("live")
	tokGone := h.tokenOf(gone.Path)
	if err := h.mgr.Delete(context.Background(), gone.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{gone.Path, "", live.Path} {
		hdr := mcpHeaders()
		hdr.Set("Authorization", "Bearer "+tokGone)
		if header != "" {
			hdr.Set(WorkspaceHeader, header)
		}
		r := h.send(http.MethodPost, hdr, strings.NewReader(initializeBody))
		check(t, "token of a deleted workspace, header "+header, r, refusedHTTP)
		if r.status != http.StatusUnauthorized {
			t.Errorf("token of a deleted workspace, header %q: HTTP %d, want 401", header, r.status)
		}
	}

	hdr := h.rawSessionAs(h.tokenOf(live.Path))
	for i := range 3 {
		// A new name each time: inventing names must not buy new buckets.
		check(t, "unknown tool within the burst", h.send(http.MethodPost, hdr, strings.NewReader(toolCall(6000+i, "no_such_tool_"+string(rune('a'+i)), `{}`))), refusedRPC)
	}
	check(t, "unknown tool past the burst", h.send(http.MethodPost, hdr, strings.NewReader(toolCall(6010, "no_such_tool_z", `{}`))), refusedLimited)
}

// hostileUserBranch runs on a harness of its own: a workspace on a branch
// the user had before asks, with its own token, to delete its branch.
func hostileUserBranch(t *testing.T, check hostileCheck) {
	h := newHarness(t)
	tip := userBranch(t, h, "user-feature")
	ws := h.create("user-feature")
	hdr := h.rawSessionAs(h.tokenOf(ws.Path))
	check(t, "workspace token: delete with the user's own branch", h.send(http.MethodPost, hdr, strings.NewReader(toolCall(7000, ToolDelete, `{"deleteBranch":true}`))), refusedForbid)
	h.waitBackground()
	if _, err := h.mgr.Resolve(ws.Path); err != nil {
		t.Errorf("the workspace went although its delete was refused: %v", err)
	}
	if got := testenv.Git(t, h.project, "rev-parse", "refs/heads/user-feature"); got != tip {
		t.Errorf("user-feature at %s after the refused delete, want %s", got, tip)
	}
}
