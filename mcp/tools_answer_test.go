package mcp

import (
	"context"
	"slices"
	"sync"
	"testing"

	"codehydra/workspace"
)

// askingAgents are ready agents, some of which wait on requests; Answer
// takes a reply that fits a request as opencode would, and records it.
type askingAgents struct {
	mu       sync.Mutex
	requests map[string][]workspace.PendingRequest // by workspace path
	answered []answered
}

type answered struct {
	path, id string
	reply    workspace.Reply
}

func (a *askingAgents) AgentStatus(path string) workspace.AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := readyAgents{}.AgentStatus(path)
	st.Requests = slices.Clone(a.requests[path])
	if len(st.Requests) > 0 {
		st.NeedsInput = 1
	}
	return st
}

func (a *askingAgents) StopAgent(context.Context, string) error { return nil }

func (a *askingAgents) Answer(_ context.Context, path, id string, r workspace.Reply) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.requests[path], func(q workspace.PendingRequest) bool { return q.ID == id })
	if i < 0 {
		return workspace.Errorf(workspace.CodeConflict, "no pending request %q", id)
	}
	if err := r.Check(a.requests[path][i]); err != nil {
		return err
	}
	a.requests[path] = slices.Delete(a.requests[path], i, i+1)
	a.answered = append(a.answered, answered{path, id, r})
	return nil
}

func (a *askingAgents) answers() []answered {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.answered)
}

// askingFamily is a family whose child waits on a permission and a
// question, and whose sibling on a permission.
func askingFamily(t *testing.T) (*family, *askingAgents) {
	t.Helper()
	agents := &askingAgents{requests: map[string][]workspace.PendingRequest{}}
	f := newFamilyWith(t, agents, func(o *Options) { o.Answers = agents })
	agents.mu.Lock()
	agents.requests[f.child.Path] = []workspace.PendingRequest{
		{ID: "per_1", SessionID: "ses_c", Kind: workspace.RequestPermission, Tool: "bash", Summary: "rm -rf build", Patterns: []string{"rm -rf build"}},
		{ID: "que_1", SessionID: "ses_c", Kind: workspace.RequestQuestion, Tool: "question", Summary: "Which colour?",
			Questions: []workspace.PendingQuestion{{Header: "Colour", Text: "Which colour?", Options: []string{"red", "blue"}}}},
	}
	agents.requests[f.sibling.Path] = []workspace.PendingRequest{
		{ID: "per_9", SessionID: "ses_s", Kind: workspace.RequestPermission, Tool: "bash", Summary: "cat ~/.ssh/id_ed25519"},
	}
	agents.requests[f.a.Path] = []workspace.PendingRequest{
		{ID: "per_5", SessionID: "ses_a", Kind: workspace.RequestPermission, Tool: "bash", Summary: "git push --force"},
	}
	agents.mu.Unlock()
	return f, agents
}

func TestWorkspaceListShowsTheRequestsOfTheCallersChildrenOnly(t *testing.T) {
	f, _ := askingFamily(t)
	got := list(t, f, f.h.tokenOf(f.a.Path), "")
	child := got["child"].Agent
	if ids := requestIDs(child.Requests); !slices.Equal(ids, []string{"per_1", "que_1"}) || child.NeedsInput != 1 {
		t.Errorf("A reads its child's requests %v (needsInput %d), want per_1 and que_1", ids, child.NeedsInput)
	}
	if r := child.Requests[0]; r.Kind != workspace.RequestPermission || r.Summary != "rm -rf build" || r.Tool != "bash" {
		t.Errorf("the child's permission request reads %+v", r)
	}
	if q := child.Requests[1].Questions; len(q) != 1 || !slices.Equal(q[0].Options, []string{"red", "blue"}) {
		t.Errorf("the child's question reads %+v", q)
	}
	for _, n := range []string{"sibling", "featA"} {
		if e := got[n].Agent; len(e.Requests) != 0 || e.NeedsInput != 1 {
			t.Errorf("A reads %s's requests %+v (needsInput %d), want none but the count", n, e.Requests, e.NeedsInput)
		}
	}
	all := list(t, f, f.h.token.Value(), "")
	if ids := requestIDs(all["sibling"].Agent.Requests); !slices.Equal(ids, []string{"per_9"}) {
		t.Errorf("the user reads the sibling's requests %v, want per_9", ids)
	}
}

func requestIDs(rs []workspace.PendingRequest) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestAParentAnswersItsChildsRequestsAndNoOneElses(t *testing.T) {
	f, agents := askingFamily(t)
	asA := f.h.sessionAs(f.h.tokenOf(f.a.Path), "")
	answer := func(ws, id string, reply map[string]any) map[string]any {
		return map[string]any{"workspace": ws, "requestId": id, "reply": reply}
	}
	refused := []struct {
		what string
		args map[string]any
		want workspace.Code
	}{
		{"a sibling's request", answer(f.sibling.Path, "per_9", map[string]any{"permission": "once"}), workspace.CodeForbidden},
		{"its own request", answer(f.a.Path, "per_5", map[string]any{"permission": "once"}), workspace.CodeForbidden},
		{"another project's workspace", answer(f.strange.Path, "per_1", map[string]any{"permission": "once"}), workspace.CodeForbidden},
		{"always for a child", answer(f.child.Path, "per_1", map[string]any{"permission": "always"}), workspace.CodeForbidden},
		{"no request named", answer(f.child.Path, "", map[string]any{"permission": "once"}), workspace.CodeInvalidInput},
		{"no workspace named", answer("", "per_1", map[string]any{"permission": "once"}), workspace.CodeInvalidInput},
		{"an unknown request", answer(f.child.Path, "per_404", map[string]any{"permission": "once"}), workspace.CodeConflict},
		{"a reply that does not fit", answer(f.child.Path, "que_1", map[string]any{"answers": [][]string{{"green"}}}), workspace.CodeInvalidInput},
	}
	for _, tt := range refused {
		if code, msg := errCode(t, call(t, asA, ToolAnswer, tt.args)); code != tt.want {
			t.Errorf("A answers %s: %s (%s), want %s", tt.what, code, msg, tt.want)
		}
	}
	if got := agents.answers(); len(got) != 0 {
		t.Fatalf("refused answers reached agents: %+v", got)
	}

	var out answerOutput
	okJSON(t, call(t, asA, ToolAnswer, answer(f.child.Path, "per_1", map[string]any{"permission": "reject", "message": "use make clean"})), &out)
	okJSON(t, call(t, asA, ToolAnswer, answer(f.child.Path, "que_1", map[string]any{"answers": [][]string{{"blue"}}})), &out)
	if !out.Answered {
		t.Errorf("answer = %+v, want answered", out)
	}
	// The user answers any workspace's requests, "always" included.
	asUser := f.h.sessionAs(f.h.token.Value(), "")
	okJSON(t, call(t, asUser, ToolAnswer, answer(f.sibling.Path, "per_9", map[string]any{"permission": "always"})), &out)
	want := []answered{
		{f.child.Path, "per_1", workspace.Reply{Permission: workspace.RejectOnce, Message: "use make clean"}},
		{f.child.Path, "que_1", workspace.Reply{Answers: [][]string{{"blue"}}}},
		{f.sibling.Path, "per_9", workspace.Reply{Permission: workspace.AllowAlways}},
	}
	got := agents.answers()
	if len(got) != len(want) {
		t.Fatalf("answers = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].path != want[i].path || got[i].id != want[i].id || got[i].reply.Permission != want[i].reply.Permission ||
			got[i].reply.Message != want[i].reply.Message || !slices.EqualFunc(got[i].reply.Answers, want[i].reply.Answers, slices.Equal) {
			t.Errorf("answer %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if ids := requestIDs(list(t, f, f.h.tokenOf(f.a.Path), "")["child"].Agent.Requests); len(ids) != 0 {
		t.Errorf("the child still waits on %v", ids)
	}
}

func TestWorkspaceAnswerWithoutAgentsIsAConflict(t *testing.T) {
	f := newFamily(t)
	res := call(t, f.h.sessionAs(f.h.tokenOf(f.a.Path), ""), ToolAnswer,
		map[string]any{"workspace": f.child.Path, "requestId": "per_1", "reply": map[string]any{"permission": "once"}})
	if code, msg := errCode(t, res); code != workspace.CodeConflict {
		t.Errorf("answer without agents: %s (%s), want conflict", code, msg)
	}
}
