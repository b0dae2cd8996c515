package mcp

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"codehydra/workspace"
)

// sleepyAgents are agents, as the domain and the server see them, that
// are ready unless hibernated, and that record what woke them.
type sleepyAgents struct {
	mu         sync.Mutex
	hibernated map[string]bool
	wakes      []string
}

func newSleepyAgents() *sleepyAgents { return &sleepyAgents{hibernated: map[string]bool{}} }

func (a *sleepyAgents) AgentStatus(path string) workspace.AgentStatus {
	if a.Hibernated(path) {
		return workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateHibernated, Detail: "hibernated"}
	}
	return workspace.AgentStatus{Type: workspace.AgentIdle, State: workspace.AgentStateReady, Counts: workspace.AgentCounts{Idle: 1, Total: 1}, Port: 4242}
}

func (a *sleepyAgents) StopAgent(context.Context, string) error { return nil }

func (a *sleepyAgents) OpencodePort(path string) (int, bool) {
	if a.Hibernated(path) {
		return 0, false
	}
	return 4242, true
}

func (a *sleepyAgents) Hibernate(_ context.Context, path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hibernated[filepath.Clean(path)] = true
	return nil
}

func (a *sleepyAgents) Wake(_ context.Context, path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hibernated[filepath.Clean(path)] {
		a.wakes = append(a.wakes, path)
	}
	delete(a.hibernated, filepath.Clean(path))
	return nil
}

func (a *sleepyAgents) Hibernated(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hibernated[filepath.Clean(path)]
}

func (a *sleepyAgents) woken() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.wakes)
}

// sleepyFamily is newFamily over sleepy agents.
func sleepyFamily(t *testing.T) (*family, *sleepyAgents) {
	t.Helper()
	agents := newSleepyAgents()
	f := newFamilyWith(t, agents, func(o *Options) { o.Hibernation, o.Agents = agents, agents })
	return f, agents
}

func TestAParentHibernatesAndWakesItsChildOnly(t *testing.T) {
	f, agents := sleepyFamily(t)
	a := f.h.sessionAs(f.h.tokenOf(f.a.Path), f.a.Path)

	var out hibernateOutput
	okJSON(t, call(t, a, ToolHibernate, map[string]any{"workspace": f.child.Path}), &out)
	if out.State != workspace.AgentStateHibernated || !agents.Hibernated(f.child.Path) {
		t.Fatalf("hibernate answered %+v; hibernated %v", out, agents.Hibernated(f.child.Path))
	}
	// Status tools answer without waking it.
	if e := list(t, f, f.h.tokenOf(f.a.Path), "")["child"]; e.Agent.State != workspace.AgentStateHibernated {
		t.Errorf("workspace_list shows the child's agent %+v", e.Agent)
	}
	var st statusOutput
	okJSON(t, call(t, f.h.session(f.child.Path), ToolGetStatus, nil), &st)
	if st.Agent.State != workspace.AgentStateHibernated {
		t.Errorf("workspace_get_status shows %+v", st.Agent)
	}
	if w := agents.woken(); len(w) != 0 {
		t.Errorf("status tools woke %v", w)
	}

	okJSON(t, call(t, a, ToolWake, map[string]any{"workspace": f.child.Path}), &out)
	if out.State != workspace.AgentStateReady || out.Port != 4242 || agents.Hibernated(f.child.Path) {
		t.Errorf("wake answered %+v", out)
	}

	for _, tc := range []struct {
		name, tool, path, want string
	}{
		{"a sibling it did not create", ToolHibernate, f.sibling.Path, "you may hibernate only those"},
		{"another project's workspace", ToolHibernate, f.strange.Path, "you may hibernate only those"},
		{"its own workspace", ToolHibernate, f.a.Path, "would stop you"},
		{"a sibling's wake", ToolWake, f.sibling.Path, "you may wake only those"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := errCode(t, call(t, a, tc.tool, map[string]any{"workspace": tc.path}))
			if code != workspace.CodeForbidden || !strings.Contains(msg, tc.want) {
				t.Errorf("%s of %s = %s %q", tc.tool, tc.path, code, msg)
			}
			if agents.Hibernated(tc.path) {
				t.Error("hibernated anyway")
			}
		})
	}
}

func TestTheUserHibernatesAnyWorkspace(t *testing.T) {
	f, agents := sleepyFamily(t)
	user := f.h.session("")
	var out hibernateOutput
	okJSON(t, call(t, user, ToolHibernate, map[string]any{"workspace": f.strange.Path}), &out)
	if !agents.Hibernated(f.strange.Path) {
		t.Fatal("not hibernated")
	}
	// Without workspace: the one X-Workspace-Path names.
	okJSON(t, call(t, f.h.session(f.sibling.Path), ToolHibernate, nil), &out)
	if !agents.Hibernated(f.sibling.Path) {
		t.Fatal("the header's workspace not hibernated")
	}
	okJSON(t, call(t, user, ToolWake, map[string]any{"workspace": f.strange.Path}), &out)
	if agents.Hibernated(f.strange.Path) || out.State != workspace.AgentStateReady {
		t.Errorf("wake answered %+v", out)
	}
}

func TestToolsThatNeedTheAgentWakeItFirst(t *testing.T) {
	for _, tc := range []struct {
		tool  string
		check func(t *testing.T, f *family, res string)
	}{
		{ToolGetOpencodePort, func(t *testing.T, _ *family, res string) {
			if res != "4242" {
				t.Errorf("port = %s", res)
			}
		}},
		{ToolAgentSession, func(t *testing.T, _ *family, res string) {
			if !strings.Contains(res, `"port":4242`) {
				t.Errorf("session = %s", res)
			}
		}},
		{ToolRestartAgent, func(t *testing.T, f *family, res string) {
			if res != `{"restarting":true}` {
				t.Errorf("restart = %s", res)
			}
			f.h.waitBackground()
			if r := f.sessions.restarted(); len(r) != 0 {
				t.Errorf("a woken agent was restarted as well: %v", r)
			}
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			f, agents := sleepyFamily(t)
			if err := agents.Hibernate(context.Background(), f.child.Path); err != nil {
				t.Fatal(err)
			}
			// The workspace's own token, as a client set up with
			// --workspace has it: its agent does not run to ask.
			res := call(t, f.h.sessionAs(f.h.tokenOf(f.child.Path), f.child.Path), tc.tool, nil)
			if res.IsError {
				t.Fatalf("%s: %s", tc.tool, text(t, res))
			}
			if w := agents.woken(); !slices.Equal(w, []string{f.child.Path}) {
				t.Errorf("woken %v, want the child", w)
			}
			tc.check(t, f, text(t, res))
		})
	}
}

func TestHibernationToolsWithoutAgentsAreAConflict(t *testing.T) {
	f := newFamily(t)
	for _, tool := range []string{ToolHibernate, ToolWake} {
		code, msg := errCode(t, call(t, f.h.session(""), tool, map[string]any{"workspace": f.child.Path}))
		if code != workspace.CodeConflict || !strings.Contains(msg, "no agents") {
			t.Errorf("%s = %s %q", tool, code, msg)
		}
	}
}
