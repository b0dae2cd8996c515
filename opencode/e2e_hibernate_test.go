//go:build unix

package opencode_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
)

// agentProcesses counts the live processes of the agent of ws: the whole
// tree carries the workspace in its environment.
func agentProcesses(t *testing.T, ws workspace.Workspace) int {
	t.Helper()
	return testenv.ProcessesWith(t, "CODEHYDRA_WORKSPACE_PATH="+filepath.ToSlash(ws.Path))
}

// slowStarts gives each start of opencode 3 minutes: on a loaded machine
// a start (and so each wake) may take over a minute.
var slowStarts = realStackOptions{
	tune:    func(o *opencode.SupervisorOptions) { o.ReadyTimeout = 3 * time.Minute },
	tuneMCP: func(o *mcp.Options) { o.CallTimeout = 3 * time.Minute },
}

// startedAgent starts the agent of a new workspace named name and waits,
// as long as a start may take, until it is ready.
func (st *realStack) startedAgent(t *testing.T, ctx context.Context, name string) (workspace.Workspace, agentAPI) {
	t.Helper()
	ws, err := st.mgr.Create(ctx, workspace.CreateOptions{ProjectPath: st.project, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	st.sup.Start(ws)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := st.sup.Wake(wctx, ws.Path); err != nil {
		t.Fatalf("agent of %s: %v\n%s", name, err, strings.Join(st.sup.Output(ws.Path), "\n"))
	}
	return ws, serverAPI(t, st.sup, ws.Path)
}

// TestRealOpencodeParentHibernatesAndWakesItsChild: with the real opencode
// and the fake model, A's agent hibernates the child it created
// (workspace_hibernate): no process of the child's agent is left, and
// workspace_list shows it hibernated without waking it. A wakes it
// (workspace_wake, with A's token and the real go-sdk client), which
// answers once the child is ready again. Then the
// user, hibernating it again, asks for its port (workspace_get_opencode_port,
// with the real go-sdk client), which wakes it on demand.
func TestRealOpencodeParentHibernatesAndWakesItsChild(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, slowStarts)

	wsA, apiA := st.startedAgent(t, ctx, "feat-a")
	child, _ := st.startedAgent(t, ctx, "child")
	testenv.Git(t, child.Path, "config", "branch."+child.Branch+".codehydra.createdBy", wsA.Path)
	if n := agentProcesses(t, child); n == 0 {
		t.Fatal("the child's agent runs no process before it is hibernated")
	}

	sesA := apiA.newSession()
	n := len(model.Requests())
	arg := `{"workspace":"` + child.Path + `"}`
	if err := apiA.prompt(ctx, sesA, `CALL codehydra_workspace_hibernate `+arg); err != nil {
		t.Fatalf("A's hibernate turn: %v", err)
	}
	if got := toolResult(model, n, `"state"`); !strings.Contains(got, `"state":"hibernated"`) {
		t.Fatalf("workspace_hibernate answered %q; requests: %+v", got, model.Requests()[n:])
	}
	if st := st.sup.AgentStatus(child.Path); st.State != workspace.AgentStateHibernated {
		t.Fatalf("child's status = %+v", st)
	}
	if n := agentProcesses(t, child); n != 0 {
		t.Errorf("%d processes of the hibernated agent are left", n)
	}

	n = len(model.Requests())
	if err := apiA.prompt(ctx, sesA, `CALL codehydra_workspace_list {}`); err != nil {
		t.Fatalf("A's list turn: %v", err)
	}
	if got := toolResult(model, n, `"workspaces"`); !strings.Contains(got, `"state":"hibernated"`) {
		t.Errorf("workspace_list does not show the child hibernated: %s", got)
	}
	if st := st.sup.AgentStatus(child.Path); st.State != workspace.AgentStateHibernated {
		t.Fatalf("workspace_list woke the child: %+v", st)
	}

	// A's token wakes its child, through the real go-sdk client: the wake
	// answers once the child is ready, which on a loaded machine takes
	// longer than opencode gives a tool call.
	tokA, err := st.token.ForWorkspace(wsA.Path)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := mcp.Dial(ctx, mcp.DialOptions{URL: st.srv.URL(), Token: tokA})
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	begin := time.Now()
	raw, err := parent.Call(ctx, mcp.ToolWake, map[string]any{"workspace": child.Path})
	if err != nil {
		t.Fatalf("workspace_wake by the parent: %v", err)
	}
	t.Logf("wake to ready through workspace_wake: %v", time.Since(begin))
	var woke struct {
		State workspace.AgentState `json:"state"`
		Port  int                  `json:"port"`
	}
	// The answer came once the child was ready: it is at once.
	s := st.sup.AgentStatus(child.Path)
	if json.Unmarshal(raw, &woke) != nil || woke.State != workspace.AgentStateReady || s.State != workspace.AgentStateReady || woke.Port != s.Port {
		t.Fatalf("workspace_wake answered %s; the child is %+v", raw, s)
	}
	if n := agentProcesses(t, child); n == 0 {
		t.Error("the woken agent runs no process")
	}

	// The user's own client, on demand.
	if err := st.sup.Hibernate(ctx, child.Path); err != nil {
		t.Fatal(err)
	}
	user, err := mcp.Dial(ctx, mcp.DialOptions{URL: st.srv.URL(), Token: st.token.Value(), WorkspacePath: child.Path})
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	var status struct {
		Agent workspace.AgentStatus `json:"agent"`
	}
	raw, err = user.Call(ctx, mcp.ToolGetStatus, nil)
	if err != nil || json.Unmarshal(raw, &status) != nil || status.Agent.State != workspace.AgentStateHibernated {
		t.Fatalf("workspace_get_status of the hibernated child = %s, %v", raw, err)
	}
	raw, err = user.Call(ctx, mcp.ToolGetOpencodePort, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.sup.AgentStatus(child.Path); s.State != workspace.AgentStateReady || string(raw) != strconv.Itoa(s.Port) {
		t.Fatalf("workspace_get_opencode_port answered %s; the child is %+v", raw, s)
	}
	// The woken agent is a working one: it takes a turn.
	if err := serverAPI(t, st.sup, child.Path).prompt(ctx, serverAPI(t, st.sup, child.Path).newSession(), "hello"); err != nil {
		t.Fatalf("the woken agent's turn: %v", err)
	}
}

// TestRealOpencodeHibernationSurvivesARestartOfCodeHydra: a workspace
// hibernated under one supervisor stays so under the next one (the next
// start of CodeHydra), with no process started, until it is woken.
func TestRealOpencodeHibernationSurvivesARestartOfCodeHydra(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, slowStarts)
	ws, _ := st.startedAgent(t, ctx, "sleepy")
	if err := st.sup.Hibernate(ctx, ws.Path); err != nil {
		t.Fatal(err)
	}
	if err := st.sup.StopAll(ctx); err != nil {
		t.Fatal(err)
	}

	// The next run: a new supervisor over the same worktree, whose
	// manager loads its project.
	next := newRealStack(t, ctx, bin, model, slowStarts)
	if _, err := next.mgr.AddProject(ctx, st.project); err != nil {
		t.Fatal(err)
	}
	next.sup.Start(ws)
	if s := next.sup.AgentStatus(ws.Path); s.State != workspace.AgentStateHibernated {
		t.Fatalf("status at the next start = %+v", s)
	}
	time.Sleep(2 * time.Second) // long enough for a start that should not happen
	if n := agentProcesses(t, ws); n != 0 {
		t.Fatalf("%d agent processes started for a hibernated workspace", n)
	}
	begin := time.Now()
	if err := next.sup.Wake(ctx, ws.Path); err != nil {
		t.Fatal(err)
	}
	t.Logf("wake to ready: %v", time.Since(begin))
	if err := serverAPI(t, next.sup, ws.Path).prompt(ctx, serverAPI(t, next.sup, ws.Path).newSession(), "hello"); err != nil {
		t.Fatalf("the woken agent's turn: %v", err)
	}
}
