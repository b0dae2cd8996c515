package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// Identity comes from the credential (docs/DESIGN.md "Trust"): a workspace's
// token acts on that workspace and its project only, whatever the request
// says about itself. Real server, real HTTP, the real SDK client, real git.

// sessionAs opens an MCP session whose requests carry token and, when
// wsPath is not "", X-Workspace-Path.
func (h *harness) sessionAs(token, wsPath string) *sdk.ClientSession {
	h.t.Helper()
	hdr := http.Header{"Authorization": {"Bearer " + token}}
	if wsPath != "" {
		hdr.Set(WorkspaceHeader, wsPath)
	}
	return h.sessionWith(&headerTransport{base: newTransport(h.t), header: hdr})
}

// initializeStatus is the HTTP status of an MCP initialize sent with token.
func (h *harness) initializeStatus(token, wsPath string) int {
	h.t.Helper()
	hdr := mcpHeaders()
	hdr.Set("Authorization", "Bearer "+token)
	if wsPath != "" {
		hdr.Set(WorkspaceHeader, wsPath)
	}
	return h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(initializeBody)).StatusCode
}

// codehydraConfig is the project's git config lines that hold workspace
// metadata.
func codehydraConfig(t *testing.T, project string) []string {
	t.Helper()
	var out []string
	for line := range strings.SplitSeq(testenv.Git(t, project, "config", "--local", "--list"), "\n") {
		if strings.Contains(line, ".codehydra.") {
			out = append(out, line)
		}
	}
	return out
}

func TestWorkspaceTokenNamingAnotherWorkspaceIsForbiddenAndChangesNothing(t *testing.T) {
	h := newHarness(t)
	a, b := h.create("a"), h.create("b")
	before := codehydraConfig(t, h.project)
	tokA := h.tokenOf(a.Path)
	if tokA == h.token.Value() || tokA == h.tokenOf(b.Path) {
		t.Fatal("a workspace token equals the master token or another workspace's")
	}

	// The header in every spelling that resolves to B.
	link := filepath.Join(t.TempDir(), "link-to-b")
	if err := os.Symlink(b.Path, link); err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{b.Path, b.Path + "/", link, h.project, "/no/such/workspace"} {
		cs := h.sessionAs(tokA, header)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{ToolSetMetadata, map[string]any{"key": "stolen", "value": "yes"}},
			{ToolSetMetadata, map[string]any{"key": "base", "value": nil}},
			{ToolGetMetadata, nil},
			{ToolGetStatus, nil},
			{ToolGetOpencodePort, nil},
			{ToolDelete, map[string]any{"keepBranch": false}},
		} {
			if code, msg := errCode(t, call(t, cs, c.tool, c.args)); code != workspace.CodeForbidden {
				t.Errorf("%s with A's token and header %s: %s (%s), want forbidden", c.tool, header, code, msg)
			}
		}
	}
	h.waitBackground()
	if after := codehydraConfig(t, h.project); !slices.Equal(before, after) {
		t.Fatalf("the git config changed:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := os.Stat(b.Path); err != nil {
		t.Fatalf("B is gone: %v", err)
	}

	// Its own workspace, named or assumed.
	own := h.sessionAs(tokA, a.Path)
	okJSON(t, call(t, own, ToolSetMetadata, map[string]any{"key": "named", "value": "1"}), new(any))
	var st statusOutput
	okJSON(t, call(t, h.sessionAs(tokA, ""), ToolGetStatus, nil), &st)
	if st.Path != a.Path {
		t.Fatalf("without a header A's token acts on %s, want %s", st.Path, a.Path)
	}
	okJSON(t, call(t, h.sessionAs(tokA, ""), ToolSetMetadata, map[string]any{"key": "assumed", "value": "2"}), new(any))
	md, err := h.mgr.Metadata(context.Background(), a.Path)
	if err != nil || md["named"] != "1" || md["assumed"] != "2" {
		t.Fatalf("A's metadata %v, %v", md, err)
	}
}

func TestWorkspaceTokenCannotAddOrRemoveProjects(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	other := testenv.GitRepo(t, "other")
	cs := h.sessionAs(h.tokenOf(a.Path), a.Path)
	for _, c := range []struct{ tool, path string }{
		{ToolProjectAdd, other},
		{ToolProjectRemove, h.project},
		{ToolProjectRemove, other},
	} {
		if code, msg := errCode(t, call(t, cs, c.tool, map[string]any{"path": c.path})); code != workspace.CodeForbidden {
			t.Errorf("%s %s with A's token: %s (%s), want forbidden", c.tool, c.path, code, msg)
		}
	}
	if ps := h.mgr.Projects(); len(ps) != 1 || ps[0].Path != h.project {
		t.Fatalf("projects after the refused calls: %v", ps)
	}
	if _, err := h.mgr.Resolve(a.Path); err != nil {
		t.Fatalf("A after the refused remove: %v", err)
	}
}

func TestWorkspaceTokenSeesAndCreatesInItsOwnProjectOnly(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	other := testenv.GitRepo(t, "other")
	if _, err := h.mgr.AddProject(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	otherWS, err := h.mgr.Create(context.Background(), workspace.CreateOptions{ProjectPath: other, Name: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	cs := h.sessionAs(h.tokenOf(a.Path), a.Path)

	var list ProjectList
	okJSON(t, call(t, cs, ToolProjectList, nil), &list)
	if len(list.Projects) != 1 || list.Projects[0].Path != h.project {
		t.Fatalf("A's token lists %+v, want only %s", list.Projects, h.project)
	}
	okJSON(t, call(t, h.session(""), ToolProjectList, nil), &list)
	if len(list.Projects) != 2 {
		t.Fatalf("the master token lists %d projects, want 2", len(list.Projects))
	}

	link := filepath.Join(t.TempDir(), "link-to-other")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{other, link, otherWS.Path, "relative", "/no/such/project"} {
		code, msg := errCode(t, call(t, cs, ToolCreate, map[string]any{"projectPath": p, "name": "sneaky"}))
		if code != workspace.CodeForbidden {
			t.Errorf("workspace_create in %s with A's token: %s (%s), want forbidden", p, code, msg)
		}
	}
	if got := testenv.Git(t, other, "branch", "--list", "sneaky"); got != "" {
		t.Fatalf("a branch was created in the other project: %q", got)
	}
	if wss, _ := h.mgr.Workspaces(other); len(wss) != 1 { // theirs
		t.Fatalf("the other project has %v", wss)
	}

	var created workspace.Workspace
	okJSON(t, call(t, cs, ToolCreate, map[string]any{"name": "defaulted"}), &created)
	if created.ProjectPath != h.project {
		t.Fatalf("workspace_create without projectPath made %+v, want it in %s", created, h.project)
	}
	okJSON(t, call(t, cs, ToolCreate, map[string]any{"projectPath": h.project, "name": "explicit"}), &created)
	if created.ProjectPath != h.project {
		t.Fatalf("workspace_create in its own project made %+v", created)
	}
}

func TestWorkspaceTokenIsWorthlessOnceItsWorkspaceIsGone(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	tokA := h.tokenOf(a.Path)
	if code := h.initializeStatus(tokA, a.Path); code != http.StatusOK {
		t.Fatalf("A's token while A exists: HTTP %d", code)
	}
	// Known to the server's token map before the delete, and not only
	// through the header.
	if code := h.initializeStatus(tokA, ""); code != http.StatusOK {
		t.Fatalf("A's token without header while A exists: HTTP %d", code)
	}
	if err := h.mgr.Delete(context.Background(), a.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{a.Path, "", h.project} {
		if code := h.initializeStatus(tokA, header); code != http.StatusUnauthorized {
			t.Errorf("A's token after A was deleted, header %q: HTTP %d, want 401", header, code)
		}
	}
	// A new workspace at the same path is a new registration with a token
	// of its own; the old one stays refused.
	again := h.create("a")
	if code := h.initializeStatus(h.tokenOf(again.Path), again.Path); code != http.StatusOK {
		t.Fatalf("the recreated workspace's token: HTTP %d", code)
	}
	// Without the header it is found through the token map, which a new
	// workspace joins once the refresh throttle allows.
	waitFor(t, "the recreated workspace's token to work without a header", func() bool {
		return h.initializeStatus(h.tokenOf(again.Path), "") == http.StatusOK
	})
	if code := h.initializeStatus(tokA, again.Path); code != http.StatusUnauthorized {
		t.Fatalf("the deleted workspace's token once a new one is at its path: HTTP %d, want 401", code)
	}
}

func TestRotatingTheMasterTokenChangesEveryWorkspaceToken(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	oldA, oldMaster := h.tokenOf(a.Path), h.token.Value()
	okJSON(t, call(t, h.sessionAs(oldA, a.Path), ToolGetStatus, nil), new(statusOutput))
	if err := h.token.Rotate(); err != nil {
		t.Fatal(err)
	}
	newA := h.tokenOf(a.Path)
	if newA == oldA {
		t.Fatal("A's token did not change with the master token")
	}
	for _, tok := range []string{oldA, oldMaster} {
		for _, header := range []string{a.Path, ""} {
			if code := h.initializeStatus(tok, header); code != http.StatusUnauthorized {
				t.Errorf("a token from before the rotation, header %q: HTTP %d, want 401", header, code)
			}
		}
	}
	okJSON(t, call(t, h.sessionAs(newA, ""), ToolGetStatus, nil), new(statusOutput))
}

func TestWorkspaceTokenCannotUseTheUsersSession(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	user := h.session(a.Path)
	hdr := mcpHeaders()
	hdr.Set("Authorization", "Bearer "+h.tokenOf(a.Path))
	hdr.Set("Mcp-Session-Id", user.ID())
	hdr.Set("Mcp-Protocol-Version", ProtocolSessions)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"project_remove","arguments":{"path":"` + h.project + `"}}}`
	if code := h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(body)).StatusCode; code != http.StatusForbidden {
		t.Fatalf("A's token on the user's session: HTTP %d, want 403", code)
	}
	if len(h.mgr.Projects()) != 1 {
		t.Fatal("the project was removed")
	}
}

func TestAuditLinesNameTheCallerAndNoToken(t *testing.T) {
	h := newHarness(t)
	a, b := h.create("a"), h.create("b")
	tokA := h.tokenOf(a.Path)
	call(t, h.sessionAs(tokA, ""), ToolGetStatus, nil)
	call(t, h.sessionAs(tokA, b.Path), ToolGetStatus, nil)
	call(t, h.sessionAs(tokA, ""), ToolProjectRemove, map[string]any{"path": h.project})
	call(t, h.session(b.Path), ToolGetStatus, nil)
	call(t, h.session(""), ToolProjectList, nil)

	data, err := os.ReadFile(h.audit)
	if err != nil {
		t.Fatal(err)
	}
	logs := h.logs.String()
	for _, secret := range []string{tokA, h.token.Value(), h.tokenOf(b.Path)} {
		if strings.Contains(string(data), secret) || strings.Contains(logs, secret) {
			t.Fatal("a token reached the audit log or the log")
		}
	}
	want := []struct{ caller, tool, workspace, outcome string }{
		{a.Path, ToolGetStatus, a.Path, "ok"},
		{a.Path, ToolGetStatus, b.Path, "forbidden"},
		{a.Path, ToolProjectRemove, "", "forbidden"},
		{userCaller, ToolGetStatus, b.Path, "ok"},
		{userCaller, ToolProjectList, "", "ok"},
	}
	var got []struct{ caller, tool, workspace, outcome string }
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e auditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, struct{ caller, tool, workspace, outcome string }{e.Caller, e.Tool, e.Workspace, e.Outcome})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit lines\n got %+v\nwant %+v", got, want)
	}
}

// listedWorkspaces is a registry of workspaces by path that counts how
// often it was listed in full.
type listedWorkspaces struct {
	byPath map[string]workspace.Workspace
	lists  int
}

func (l *listedWorkspaces) Resolve(path string) (workspace.Workspace, error) {
	if ws, ok := l.byPath[path]; ok {
		return ws, nil
	}
	return workspace.Workspace{}, workspace.Errorf(workspace.CodeWorkspaceNotFound, "no workspace at %s", path)
}

func (l *listedWorkspaces) AllWorkspaces() []workspace.Workspace {
	l.lists++
	out := make([]workspace.Workspace, 0, len(l.byPath))
	for _, ws := range l.byPath {
		out = append(out, ws)
	}
	return out
}

// worktrees makes a repository with one linked worktree per name, none of
// them registered anywhere, and returns their paths by name.
func worktrees(t *testing.T, names ...string) map[string]string {
	t.Helper()
	isolateGit(t)
	repo := testenv.GitRepo(t, "w")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		out[n] = filepath.Join(dir, n)
		testenv.Git(t, repo, "worktree", "add", "-b", n, out[n])
	}
	return out
}

func TestIdentitiesFindWorkspaceTokensWithoutListingAtEveryWrongToken(t *testing.T) {
	master, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	w := worktrees(t, "a", "b", "c", "d", "gone")
	tokenOf := func(name string) string {
		t.Helper()
		tok, err := master.ForWorkspace(w[name])
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	reg := &listedWorkspaces{byPath: map[string]workspace.Workspace{}}
	for _, n := range []string{"a", "b", "c"} {
		reg.byPath[w[n]] = workspace.Workspace{Path: w[n], ProjectPath: "/w"}
	}
	now := time.Unix(1000, 0)
	ids := &identities{master: master, workspaces: reg, now: func() time.Time { return now }}

	if who, ok := ids.identify(master.Value(), w["b"]); !ok || !who.isUser() {
		t.Fatalf("the master token is %+v, %v", who, ok)
	}
	// Named by its header: its nonce is learnt once (one listing), then
	// kept.
	for range 3 {
		if who, ok := ids.identify(tokenOf("a"), w["a"]); !ok || who.ws.Path != w["a"] || reg.lists != 1 {
			t.Fatalf("A's token with A's header: %+v %v, %d listings", who, ok, reg.lists)
		}
	}
	// With another workspace's header, or none: found through the map.
	for _, header := range []string{w["b"], ""} {
		if who, ok := ids.identify(tokenOf("c"), header); !ok || who.ws.Path != w["c"] {
			t.Fatalf("C's token with header %q: %+v %v", header, who, ok)
		}
	}
	lists := reg.lists
	wrong := strings.Repeat("ab", 32)
	for range 100 {
		if _, ok := ids.identify(wrong, ""); ok {
			t.Fatal("a wrong token was accepted")
		}
		if _, ok := ids.identify(wrong, w["a"]); ok {
			t.Fatal("a wrong token was accepted")
		}
	}
	if reg.lists-lists > 1 {
		t.Fatalf("200 wrong tokens listed the workspaces %d times", reg.lists-lists)
	}
	for _, bad := range []string{"", "short", master.Value() + "0", tokenOf("gone")} {
		if _, ok := ids.identify(bad, w["a"]); ok {
			t.Fatalf("token %q was accepted", bad)
		}
	}
	// A workspace created since the last listing is found once the
	// throttle allows it; a removed one is refused at once.
	reg.byPath[w["d"]] = workspace.Workspace{Path: w["d"], ProjectPath: "/w"}
	delete(reg.byPath, w["c"])
	now = now.Add(minRefresh)
	if who, ok := ids.identify(tokenOf("d"), ""); !ok || who.ws.Path != w["d"] {
		t.Fatalf("D's token without header: %+v %v", who, ok)
	}
	if _, ok := ids.identify(tokenOf("c"), ""); ok {
		t.Fatal("the token of a removed workspace was accepted")
	}
}
