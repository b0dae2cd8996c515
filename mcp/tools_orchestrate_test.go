package mcp

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// readyAgents is a supervisor, as the workspace domain sees it, whose
// agents all run and are ready.
type readyAgents struct{}

func (readyAgents) AgentStatus(string) workspace.AgentStatus {
	return workspace.AgentStatus{Type: workspace.AgentIdle, State: workspace.AgentStateReady, Counts: workspace.AgentCounts{Idle: 1, Total: 1}}
}
func (readyAgents) StopAgent(context.Context, string) error { return nil }

// fakeSessions answers the orchestration tools' questions about agents
// from fixed tables and records the restarts asked for.
type fakeSessions struct {
	delivery map[string]workspace.PromptDelivery
	replies  map[string]string
	sessions map[string]string

	mu       sync.Mutex
	restarts []string
	// onRestart runs inside Restart.
	onRestart func(path string)
}

func (f *fakeSessions) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	d, ok := f.delivery[path]
	return d, ok
}

func (f *fakeSessions) CurrentSession(_ context.Context, path string) (string, error) {
	return f.sessions[path], nil
}

func (f *fakeSessions) LastReply(_ context.Context, path string) (string, bool, error) {
	r := f.replies[path]
	if len(r) > 10 {
		return r[:10], true, nil
	}
	return r, false, nil
}

func (f *fakeSessions) Restart(path string) error {
	if f.onRestart != nil {
		f.onRestart(path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts = append(f.restarts, path)
	return nil
}

func (f *fakeSessions) restarted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.restarts)
}

// family is a project with a workspace A, a child of A (createdBy A), a
// sibling A did not create, and a second project with one workspace.
type family struct {
	h                          *harness
	sessions                   *fakeSessions
	a, child, sibling, strange workspace.Workspace
}

func newFamily(t *testing.T, opts ...harnessOption) *family {
	t.Helper()
	return newFamilyWith(t, readyAgents{}, opts...)
}

// newFamilyWith is newFamily with agents for the manager.
func newFamilyWith(t *testing.T, agents workspace.Agents, opts ...harnessOption) *family {
	t.Helper()
	f := &family{sessions: &fakeSessions{}}
	f.h = newHarnessWith(t, agents, append([]harnessOption{func(o *Options) { o.Sessions = f.sessions }}, opts...)...)
	f.a, f.child, f.sibling = f.h.create("featA"), f.h.create("child"), f.h.create("sibling")
	ctx := context.Background()
	// What Create records when A's agent creates the child (createdBy is
	// not writable through SetMetadata).
	testenv.Git(t, f.child.Path, "config", "branch.child.codehydra.createdBy", f.a.Path)
	other := testenv.GitRepo(t, "other")
	if _, err := f.h.mgr.AddProject(ctx, other); err != nil {
		t.Fatal(err)
	}
	var err error
	f.strange, err = f.h.mgr.Create(ctx, workspace.CreateOptions{ProjectPath: other, Name: "strange"})
	if err != nil {
		t.Fatal(err)
	}
	f.sessions.delivery = map[string]workspace.PromptDelivery{}
	f.sessions.replies = map[string]string{}
	for _, ws := range []workspace.Workspace{f.a, f.child, f.sibling, f.strange} {
		f.sessions.delivery[ws.Path] = workspace.PromptDelivery{State: workspace.DeliveryDelivered, SessionID: "ses_" + ws.Name}
		f.sessions.replies[ws.Path] = "reply of " + ws.Name
	}
	return f
}

func list(t *testing.T, f *family, token, header string) map[string]ListEntry {
	t.Helper()
	var out WorkspaceList
	okJSON(t, call(t, f.h.sessionAs(token, header), ToolList, nil), &out)
	byName := map[string]ListEntry{}
	for _, e := range out.Workspaces {
		byName[e.Name] = e
	}
	return byName
}

func names(m map[string]ListEntry) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

func TestWorkspaceListAsAWorkspaceShowsItsProjectAndFollowsItsChildrenOnly(t *testing.T) {
	f := newFamily(t)
	got := list(t, f, f.h.tokenOf(f.a.Path), "")
	if n := names(got); !slices.Equal(n, []string{"child", "featA", "sibling"}) {
		t.Fatalf("A lists %v, want its project's workspaces child, featA, sibling", n)
	}
	child := got["child"]
	if child.CreatedBy != f.a.Path || child.Path != f.child.Path || child.Branch != "child" || child.Agent.State != workspace.AgentStateReady {
		t.Errorf("child entry %+v", child)
	}
	if child.Prompt == nil || child.Prompt.State != workspace.DeliveryDelivered || child.Prompt.SessionID != "ses_child" {
		t.Errorf("child's prompt %+v, want delivered in ses_child", child.Prompt)
	}
	if child.LastReply == nil || child.LastReply.Text != "reply of c" || !child.LastReply.Truncated {
		t.Errorf("child's last reply %+v, want the cut text, marked truncated", child.LastReply)
	}
	for _, n := range []string{"featA", "sibling"} {
		if e := got[n]; e.Prompt != nil || e.LastReply != nil || e.CreatedBy != "" {
			t.Errorf("A reads %s, which it did not create: %+v", n, e)
		}
	}
}

func TestWorkspaceListAsTheUserShowsAllOrTheNamedWorkspacesProject(t *testing.T) {
	f := newFamily(t)
	all := list(t, f, f.h.token.Value(), "")
	if n := names(all); !slices.Equal(n, []string{"child", "featA", "sibling", "strange"}) {
		t.Fatalf("the user lists %v, want every project's workspaces", n)
	}
	for n, e := range all {
		if e.Prompt == nil || e.LastReply == nil {
			t.Errorf("the user does not read %s: %+v", n, e)
		}
	}
	if n := names(list(t, f, f.h.token.Value(), f.strange.Path)); !slices.Equal(n, []string{"strange"}) {
		t.Fatalf("the user naming strange lists %v, want strange's project only", n)
	}
	code, _ := errCode(t, call(t, f.h.sessionAs(f.h.token.Value(), "/no/such/workspace"), ToolList, nil))
	if code != workspace.CodeWorkspaceNotFound {
		t.Fatalf("the user naming no workspace: %s, want workspace-not-found", code)
	}
}

func TestWorkspaceTokenCannotActOnItsChildThroughAnyTool(t *testing.T) {
	f := newFamily(t)
	before := codehydraConfig(t, f.h.project)
	cs := f.h.sessionAs(f.h.tokenOf(f.a.Path), f.child.Path)
	args := map[string]map[string]any{ToolSetMetadata: {"key": "stolen", "value": "yes"}}
	for _, d := range toolDefs() {
		if !d.needsWorkspace {
			continue
		}
		if code, msg := errCode(t, call(t, cs, d.tool.Name, args[d.tool.Name])); code != workspace.CodeForbidden {
			t.Errorf("%s on A's child with A's token: %s (%s), want forbidden", d.tool.Name, code, msg)
		}
	}
	f.h.waitBackground()
	if after := codehydraConfig(t, f.h.project); !slices.Equal(before, after) {
		t.Fatalf("the git config changed:\nbefore %q\nafter  %q", before, after)
	}
	if r := f.sessions.restarted(); len(r) != 0 {
		t.Fatalf("restarted %v", r)
	}
}

func TestGetAgentSessionGivesPortAndSessionOrNulls(t *testing.T) {
	var agents portAgents = map[string]int{}
	f := newFamily(t, func(o *Options) { o.Agents = agents })
	agents[f.a.Path] = 4100
	f.sessions.sessions = map[string]string{f.a.Path: "ses_1"}
	txt := text(t, call(t, f.h.sessionAs(f.h.tokenOf(f.a.Path), ""), ToolAgentSession, nil))
	if !jsonEqual(t, []byte(txt), []byte(`{"port":4100,"sessionId":"ses_1"}`)) {
		t.Errorf("A's agent session %s", txt)
	}
	agents[f.child.Path] = 4101
	txt = text(t, call(t, f.h.sessionAs(f.h.tokenOf(f.child.Path), ""), ToolAgentSession, nil))
	if !jsonEqual(t, []byte(txt), []byte(`{"port":4101,"sessionId":null}`)) {
		t.Errorf("a session-less agent's session %s", txt)
	}
	txt = text(t, call(t, f.h.sessionAs(f.h.tokenOf(f.sibling.Path), ""), ToolAgentSession, nil))
	if !jsonEqual(t, []byte(txt), []byte(`{"port":null,"sessionId":null}`)) {
		t.Errorf("a stopped agent's session %s", txt)
	}
}

func TestRestartAgentAnswersBeforeItRestartsTheCallersAgent(t *testing.T) {
	f := newFamily(t)
	answered := make(chan struct{})
	var restartedFirst bool
	// A restart before the answer holds the answer back, so it would
	// wait here until the timeout.
	f.sessions.onRestart = func(string) {
		select {
		case <-answered:
		case <-time.After(5 * time.Second):
			restartedFirst = true
		}
	}
	cs := f.h.sessionAs(f.h.tokenOf(f.a.Path), "")
	var out restartOutput
	okJSON(t, call(t, cs, ToolRestartAgent, nil), &out)
	close(answered)
	if !out.Restarting {
		t.Fatalf("answer %+v", out)
	}
	waitFor(t, "the restart", func() bool { return len(f.sessions.restarted()) == 1 })
	if r := f.sessions.restarted(); r[0] != f.a.Path || restartedFirst {
		t.Fatalf("restarted %v (before the answer: %v), want A's agent after the answer", r, restartedFirst)
	}
}

func TestLogWritesOneLineAttributedToTheCaller(t *testing.T) {
	f := newFamily(t)
	cs := f.h.sessionAs(f.h.tokenOf(f.a.Path), "")
	res := call(t, cs, ToolLog, map[string]any{
		"level": "warn", "message": "step 2\ndone " + strings.Repeat("x", 2000),
		"context": map[string]any{"ticket": "ABC-1", "n": 3, "ok": true, "caller": "user"},
	})
	if txt := text(t, res); res.IsError || txt != "null" {
		t.Fatalf("log: %s", txt)
	}
	var line map[string]any
	for l := range strings.SplitSeq(f.h.logs.String(), "\n") {
		if strings.Contains(l, "step 2") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	msg, _ := line["msg"].(string)
	if line["level"] != "WARN" || line["caller"] != f.a.Path || line["source"] != "agent" ||
		line["ctx.ticket"] != "ABC-1" || line["ctx.n"] != 3.0 || line["ctx.ok"] != true || line["ctx.caller"] != "user" {
		t.Fatalf("log line %v", line)
	}
	if strings.Contains(msg, "\n") || len(msg) > maxLogMessage || !strings.HasSuffix(msg, "…") {
		t.Fatalf("message not one capped line: %q", msg)
	}
	audit, err := os.ReadFile(f.h.audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(audit), "ABC-1") || strings.Contains(string(audit), "step 2") {
		t.Fatalf("the audit log holds the call's values:\n%s", audit)
	}
}

func TestLogRefusesNestedContextAndUnknownLevels(t *testing.T) {
	f := newFamily(t)
	cs := f.h.session("")
	for name, args := range map[string]map[string]any{
		"nested object": {"level": "info", "message": "m", "context": map[string]any{"a": map[string]any{"b": 1}}},
		"list":          {"level": "info", "message": "m", "context": map[string]any{"a": []any{1}}},
		"null":          {"level": "info", "message": "m", "context": map[string]any{"a": nil}},
		"level":         {"level": "fatal", "message": "m"},
		"key":           {"level": "info", "message": "m", "context": map[string]any{"a b": "x"}},
	} {
		if code, msg := errCode(t, call(t, cs, ToolLog, args)); code != workspace.CodeInvalidInput {
			t.Errorf("%s: %s (%s), want invalid-input", name, code, msg)
		}
	}
	if strings.Contains(f.h.logs.String(), `"msg":"m"`) {
		t.Fatalf("a refused line was logged:\n%s", f.h.logs.String())
	}
}

func TestOrchestrationToolsAreRateLimited(t *testing.T) {
	f := newFamily(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 2 })
	cs := f.h.sessionAs(f.h.tokenOf(f.a.Path), "")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{ToolLog, map[string]any{"level": "info", "message": "m"}},
		{ToolList, nil},
		{ToolAgentSession, nil},
	} {
		for range 2 {
			if res := call(t, cs, c.tool, c.args); res.IsError {
				t.Fatalf("%s within the burst: %s", c.tool, text(t, res))
			}
		}
		if code, _ := errCode(t, call(t, cs, c.tool, c.args)); code != workspace.CodeRateLimited {
			t.Errorf("%s past the burst: %s, want rate-limited", c.tool, code)
		}
	}
}
