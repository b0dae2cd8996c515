package opencode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/fakemodel"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
)

// agentAPI talks to one opencode server, with its password (basic auth
// as "opencode") unless that is "".
type agentAPI struct {
	t        *testing.T
	base     string
	password string
}

// serverAPI is the API of the ready agent server of the workspace at
// path, with the password the supervisor gave it.
func serverAPI(t *testing.T, sup *opencode.Supervisor, path string) agentAPI {
	t.Helper()
	port, password, ok := sup.OpencodeServer(path)
	if !ok {
		t.Fatalf("no server for the agent of %s", path)
	}
	return agentAPI{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), password: password}
}

func (a agentAPI) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.password != "" {
		req.SetBasicAuth("opencode", a.password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// newSession creates a session in the agent's workspace.
func (a agentAPI) newSession() string {
	a.t.Helper()
	var s struct {
		ID string `json:"id"`
	}
	if err := a.do(context.Background(), http.MethodPost, "/session", map[string]any{}, &s); err != nil {
		a.t.Fatalf("create session: %v", err)
	}
	return s.ID
}

// prompt runs one turn to its end (the request returns when it is over).
func (a agentAPI) prompt(ctx context.Context, session, text string) error {
	return a.do(ctx, http.MethodPost, "/session/"+session+"/message", map[string]any{
		"model": map[string]any{"providerID": "fake", "modelID": "m"},
		"parts": []any{map[string]any{"type": "text", "text": text}},
	}, nil)
}

// endOf waits for the end of a turn whose request's result comes on turn.
func endOf(t *testing.T, turn <-chan error, what string) {
	t.Helper()
	select {
	case err := <-turn:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// gate holds the fake model's answer to one tool call until released.
type gate struct {
	tool    string
	mu      sync.Mutex
	release chan struct{}
}

func (g *gate) before(ctx context.Context, r fakemodel.Request) {
	g.mu.Lock()
	ch := g.release
	g.mu.Unlock()
	if ch == nil || r.ToolCall != g.tool {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.release != nil {
		close(g.release)
		g.release = nil
	}
}

// realStack is the app's core around the real opencode: a temp project,
// the workspace manager, the MCP server and the agent supervisor, in the
// app's order (MCP server, then the config file, then agents), isolated
// from the machine: git and XDG for this process (the manager runs git)
// and for opencode, which writes under HOME and the XDG folders. The
// opencode config is docs/DESIGN.md's plus the fake model as provider.
type realStack struct {
	project string
	mgr     *workspace.Manager
	sup     *opencode.Supervisor
	srv     *mcp.Server
	token   *mcp.Token
	logs    *testenv.SyncBuffer // the app's log, as text
}

// realStackOptions vary a realStack.
type realStackOptions struct {
	// config is added to the opencode config file (e.g. "permission").
	config map[string]any
	// tune adjusts the supervisor's options.
	tune func(*opencode.SupervisorOptions)
	// tuneMCP adjusts the MCP server's options.
	tuneMCP func(*mcp.Options)
}

// newRealStack builds a realStack that runs until ctx ends and the test
// cleans up. No agent is started.
func newRealStack(t *testing.T, ctx context.Context, bin string, model *fakemodel.Server, so realStackOptions) *realStack {
	t.Helper()
	tmp := t.TempDir()
	gitEnv := map[string]string{
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
	}
	agentEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(tmp, "home"), "OPENCODE_DISABLE_MODELS_FETCH=1"}
	for k, v := range gitEnv {
		t.Setenv(k, v)
		agentEnv = append(agentEnv, k+"="+v)
	}
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		dir := filepath.Join(tmp, strings.ToLower(v))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv(v, dir)
		agentEnv = append(agentEnv, v+"="+dir)
	}
	paths.Reload()
	t.Cleanup(paths.Reload)

	project := testenv.GitRepo(t, "project")
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	events := workspace.NewEvents(logger)

	token, err := mcp.LoadOrCreateToken(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	var srv *mcp.Server
	supOpts := opencode.SupervisorOptions{
		Bin:     bin,
		MCPPort: func() int { return srv.Port() },
		MCPToken: func(ws string) string {
			tok, err := token.ForWorkspace(ws)
			if err != nil {
				t.Errorf("token of %s: %v", ws, err)
			}
			return tok
		},
		OnChange: func(path string) {
			events.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: workspace.Workspace{Path: path}})
		},
		Logger: logger,
		Env:    agentEnv,
	}
	if so.tune != nil {
		so.tune(&supOpts)
	}
	sup := opencode.NewSupervisor(supOpts)
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: filepath.Join(tmp, "worktrees"), Logger: logger, Agents: sup, Events: events})
	if err := mgr.Load(ctx); err != nil {
		t.Fatal(err)
	}
	mcpOpts := mcp.Options{Token: token, Workspaces: mgr, Agents: sup, Sessions: sup, Hibernation: sup, Logger: logger}
	if so.tuneMCP != nil {
		so.tuneMCP(&mcpOpts)
	}
	srv, err = mcp.New(mcpOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := sup.StopAll(sctx); err != nil {
			t.Errorf("stop agents: %v", err)
		}
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("shutdown MCP server: %v", err)
		}
		<-served
	})

	cfg := paths.OpencodeConfigFile()
	var conf map[string]any
	if err := json.Unmarshal(opencode.ConfigJSON(), &conf); err != nil {
		t.Fatal(err)
	}
	conf["provider"] = map[string]any{"fake": map[string]any{
		"npm":     "@ai-sdk/openai-compatible",
		"options": map[string]any{"baseURL": model.BaseURL(), "apiKey": "x"},
		"models":  map[string]any{"m": map[string]any{"tool_call": true}},
	}}
	conf["model"] = "fake/m"
	conf["autoupdate"] = false
	maps.Copy(conf, so.config)
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &realStack{project: project, mgr: mgr, sup: sup, srv: srv, token: token, logs: logs}
}

func TestRealOpencodeAgentsUseTheirOwnWorkspaces(t *testing.T) {
	bin := testenv.RealOpencode(t)

	// The model.
	g := &gate{tool: "codehydra_workspace_set_metadata", release: make(chan struct{})}
	model := &fakemodel.Server{BeforeReply: g.before}
	if err := model.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	defer g.open()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{})
	project, mgr, sup := st.project, st.mgr, st.sup

	// A project with two workspaces.
	wsA, err := mgr.Create(ctx, workspace.CreateOptions{ProjectPath: project, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	wsB, err := mgr.Create(ctx, workspace.CreateOptions{ProjectPath: project, Name: "b"})
	if err != nil {
		t.Fatal(err)
	}

	if killed, err := sup.ReapOrphans(); err != nil || killed != 0 {
		t.Fatalf("ReapOrphans = %d, %v", killed, err)
	}
	sup.Start(wsA)
	sup.Start(wsB)
	ready := func(ws workspace.Workspace) agentAPI {
		t.Helper()
		testenv.WaitFor(t, "agent of "+ws.Name+" ready", 90*time.Second, func() bool {
			st := sup.AgentStatus(ws.Path)
			if st.State == workspace.AgentStateFailed {
				t.Fatalf("agent of %s failed: %s\n%s", ws.Name, st.Detail, strings.Join(sup.Output(ws.Path), "\n"))
			}
			return st.State == workspace.AgentStateReady
		})
		api := serverAPI(t, sup, ws.Path)
		var m map[string]struct {
			Status string `json:"status"`
		}
		if err := api.do(ctx, http.MethodGet, "/mcp", nil, &m); err != nil || m["codehydra"].Status != "connected" {
			t.Fatalf("agent of %s: GET /mcp = %v, %v; want codehydra connected", ws.Name, m, err)
		}
		return api
	}
	apiA, apiB := ready(wsA), ready(wsB)
	if apiA.base == apiB.base {
		t.Fatalf("both agents on %s", apiA.base)
	}

	// A: one turn that sets metadata through the MCP server. The model's
	// reply is held so the turn is seen busy.
	sesA := apiA.newSession()
	turn := make(chan error, 1)
	go func() {
		turn <- apiA.prompt(ctx, sesA, `CALL codehydra_workspace_set_metadata {"key":"note","value":"from-a"}`)
	}()
	testenv.WaitFor(t, "A busy", 30*time.Second, func() bool {
		st := sup.AgentStatus(wsA.Path)
		return st.Type == workspace.AgentBusy && st.Counts == workspace.AgentCounts{Busy: 1, Total: 1}
	})
	g.open()
	endOf(t, turn, "turn in A")
	testenv.WaitFor(t, "A idle", 30*time.Second, func() bool {
		st := sup.AgentStatus(wsA.Path)
		return st.Type == workspace.AgentIdle && st.Counts == workspace.AgentCounts{Idle: 1, Total: 1}
	})
	if !slices.ContainsFunc(model.Requests(), func(r fakemodel.Request) bool { return r.ToolCall == g.tool }) {
		t.Fatalf("the model never called %s; requests: %+v", g.tool, model.Requests())
	}
	if got := testenv.Git(t, project, "config", "--get", "branch.a.codehydra.note"); got != "from-a" {
		t.Errorf("A's metadata = %q, want from-a", got)
	}
	if all := testenv.Git(t, project, "config", "--list"); strings.Contains(all, "branch.b.codehydra.note") {
		t.Errorf("B got A's metadata:\n%s", all)
	}

	// B deletes its own workspace; its agent goes with it.
	recordsBefore, _ := os.ReadDir(paths.AgentsDir())
	sesB := apiB.newSession()
	go func() {
		// The agent is stopped during its own turn; the request may fail.
		_ = apiB.prompt(ctx, sesB, `CALL codehydra_workspace_delete {}`)
	}()
	testenv.WaitFor(t, "B's workspace deleted", 60*time.Second, func() bool {
		_, err := os.Stat(wsB.Path)
		return errors.Is(err, os.ErrNotExist)
	})
	testenv.WaitFor(t, "B gone from the manager", 30*time.Second, func() bool {
		_, err := mgr.Resolve(wsB.Path)
		return workspace.CodeOf(err) == workspace.CodeWorkspaceNotFound
	})
	if _, ok := sup.OpencodePort(wsB.Path); ok {
		t.Error("B's agent still has a port")
	}
	if err := apiB.do(ctx, http.MethodGet, "/global/health", nil, nil); err == nil {
		t.Error("B's server still answers")
	}
	recordsAfter, _ := os.ReadDir(paths.AgentsDir())
	if len(recordsBefore) != 2 || len(recordsAfter) != 1 {
		t.Errorf("agent records: %d before, %d after B's delete; want 2, 1", len(recordsBefore), len(recordsAfter))
	}
	// The branch goes last, after the worktree.
	testenv.WaitFor(t, "branch b deleted", 30*time.Second, func() bool {
		return testenv.Git(t, project, "branch", "--list", "b") == ""
	})

	// A keeps working: another turn, now asking the MCP server about A.
	if st := sup.AgentStatus(wsA.Path); st.State != workspace.AgentStateReady {
		t.Fatalf("A after B's delete: %+v", st)
	}
	n := len(model.Requests())
	if err := apiA.prompt(ctx, sesA, `CALL codehydra_workspace_get_status {}`); err != nil {
		t.Fatalf("second turn in A: %v", err)
	}
	var sawStatus bool
	for _, r := range model.Requests()[n:] {
		if r.LastRole == "tool" && strings.Contains(r.LastText, `"isDirty"`) {
			sawStatus = true
		}
	}
	if !sawStatus {
		t.Errorf("A's get_status result never reached the model; requests: %+v", model.Requests()[n:])
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
