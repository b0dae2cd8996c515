//go:build unix

package opencode_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/fakemodel"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/opencode"
	"codehydra/workspace"
)

// startModel starts a fake model for the test.
func startModel(t *testing.T, before func(context.Context, fakemodel.Request)) *fakemodel.Server {
	t.Helper()
	model := &fakemodel.Server{BeforeReply: before}
	if err := model.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	return model
}

// readyAgent starts the agent of a new workspace named name and returns it
// with the API of its server once it is ready.
func (st *realStack) readyAgent(t *testing.T, ctx context.Context, name string) (workspace.Workspace, agentAPI) {
	t.Helper()
	ws, err := st.mgr.Create(ctx, workspace.CreateOptions{ProjectPath: st.project, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	st.sup.Start(ws)
	return ws, st.waitReady(t, ws, 0)
}

// waitReady waits until the agent of ws is ready in a process other than
// notPID, and returns the API of its server.
func (st *realStack) waitReady(t *testing.T, ws workspace.Workspace, notPID int) agentAPI {
	t.Helper()
	testenv.WaitFor(t, "agent of "+ws.Name+" ready", 3*time.Minute, func() bool {
		s := st.sup.AgentStatus(ws.Path)
		if s.State == workspace.AgentStateFailed {
			t.Fatalf("agent of %s failed: %s\n%s", ws.Name, s.Detail, strings.Join(st.sup.Output(ws.Path), "\n"))
		}
		pid := agentPID(t, ws.Path)
		return s.State == workspace.AgentStateReady && pid != 0 && pid != notPID
	})
	return serverAPI(t, st.sup, ws.Path)
}

// pending lists the IDs of the requests the server waits on: path is
// /permission or /question.
func (a agentAPI) pending(ctx context.Context, path string) []string {
	a.t.Helper()
	var reqs []struct {
		ID string `json:"id"`
	}
	if err := a.do(ctx, http.MethodGet, path, nil, &reqs); err != nil {
		a.t.Fatalf("list %s: %v", path, err)
	}
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.ID)
	}
	return ids
}

// askBash is the opencode config that makes every bash command wait for
// the user's permission.
var askBash = map[string]any{"permission": map[string]any{"bash": "ask"}}

// bashTurn is a prompt on which the fake model runs a bash command.
const bashTurn = `CALL bash {"command":"echo hello","description":"Say hello"}`

// questionTurn is a prompt on which the fake model asks the user a
// question with opencode's question tool.
const questionTurn = `CALL question {"questions":[{"question":"Go on?","header":"Go on","options":[{"label":"Yes","description":"go on"},{"label":"No","description":"stop"}]}]}`

func TestRealOpencodePermissionsAndQuestionsAreReportedAsNeedsInput(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{config: askBash})
	ws, api := st.readyAgent(t, ctx, "asks")
	session := api.newSession()
	tests := []struct {
		what, prompt, list string
		answer             any
	}{
		{"a permission request", bashTurn, "/permission", map[string]any{"reply": "once"}},
		{"a question", questionTurn, "/question", map[string]any{"answers": [][]string{{"Yes"}}}},
	}
	for _, tt := range tests {
		turn := make(chan error, 1)
		go func() { turn <- api.prompt(ctx, session, tt.prompt) }()
		st.waitNeedsInput(t, ws, 1, workspace.AgentBusy, tt.what+" reported")
		ids := api.pending(ctx, tt.list)
		if len(ids) != 1 {
			t.Fatalf("pending %s = %q, want one", tt.list, ids)
		}
		// The user answers: the request is gone and the turn ends.
		if err := api.do(ctx, http.MethodPost, tt.list+"/"+ids[0]+"/reply", tt.answer, nil); err != nil {
			t.Fatalf("answer %s: %v", tt.what, err)
		}
		endOf(t, turn, "the turn with "+tt.what)
		st.waitNeedsInput(t, ws, 0, workspace.AgentIdle, tt.what+" answered")
	}
	var ran bool
	for _, r := range model.Requests() {
		ran = ran || r.LastRole == "tool" && strings.Contains(r.LastText, "hello")
	}
	if !ran {
		t.Errorf("the allowed command's output never reached the model; requests: %+v", model.Requests())
	}
}

// waitNeedsInput waits until the agent of ws reports needs sessions
// waiting for the user, and the type typ.
func (st *realStack) waitNeedsInput(t *testing.T, ws workspace.Workspace, needs int, typ workspace.AgentType, what string) {
	t.Helper()
	testenv.WaitFor(t, what, 30*time.Second, func() bool {
		s := st.sup.AgentStatus(ws.Path)
		return s.NeedsInput == needs && s.Type == typ
	})
}

// eventCutter is the supervisor's HTTP transport with a switch on the
// agents' event streams (GET /event): cut breaks the open ones and makes
// new ones fail until restore. The other requests pass.
type eventCutter struct {
	base http.RoundTripper

	mu     sync.Mutex
	down   bool
	open   []io.Closer
	opened int // streams opened so far
}

func (c *eventCutter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/event" {
		return c.base.RoundTrip(r)
	}
	c.mu.Lock()
	down := c.down
	c.mu.Unlock()
	if down {
		return nil, errors.New("event stream cut by the test")
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.open = append(c.open, resp.Body)
	c.opened++
	c.mu.Unlock()
	return resp, nil
}

func (c *eventCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = true
	for _, b := range c.open {
		b.Close()
	}
	c.open = nil
}

func (c *eventCutter) restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = false
}

func (c *eventCutter) streams() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened
}

func TestRealOpencodeStatusRecoversAfterTheEventStreamBreaks(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cutter := &eventCutter{base: &http.Transport{Proxy: nil}}
	st := newRealStack(t, ctx, bin, model, realStackOptions{config: askBash, tune: func(o *opencode.SupervisorOptions) {
		o.HTTPClient = &http.Client{Transport: cutter}
		o.EventRetryMin, o.EventRetryMax = 50*time.Millisecond, 200*time.Millisecond
	}})
	ws, api := st.readyAgent(t, ctx, "cut")
	testenv.WaitFor(t, "the event stream open", 10*time.Second, func() bool { return cutter.streams() > 0 })

	cutter.cut()
	testenv.WaitFor(t, "the broken stream logged", 10*time.Second, func() bool {
		return strings.Contains(st.logs.String(), `level=WARN msg="agent event stream broke`)
	})
	// While the stream is down a turn starts and asks for a permission;
	// the supervisor hears of neither.
	session := api.newSession()
	turn := make(chan error, 1)
	go func() { turn <- api.prompt(ctx, session, bashTurn) }()
	testenv.WaitFor(t, "the permission request pending in opencode", 30*time.Second, func() bool {
		return len(api.pending(ctx, "/permission")) == 1
	})
	if s := st.sup.AgentStatus(ws.Path); s.NeedsInput != 0 || s.Type != workspace.AgentNone {
		t.Fatalf("status %+v while the stream was cut: the test proves nothing", s)
	}

	// The stream comes back: the status is read afresh and is right.
	cutter.restore()
	st.waitNeedsInput(t, ws, 1, workspace.AgentBusy, "the status recovered")
	if s := st.sup.AgentStatus(ws.Path); s.Counts != (workspace.AgentCounts{Busy: 1, Total: 1}) {
		t.Errorf("counts after the recovery = %+v, want one busy session", s.Counts)
	}
	// The status is published before the reopen is logged.
	testenv.WaitFor(t, "the recovery logged", 5*time.Second, func() bool {
		return strings.Contains(st.logs.String(), `msg="agent event stream reopened; status read afresh"`)
	})
	// And it follows the stream again.
	if err := api.do(ctx, http.MethodPost, "/permission/"+api.pending(ctx, "/permission")[0]+"/reply", map[string]any{"reply": "once"}, nil); err != nil {
		t.Fatalf("reply to the permission: %v", err)
	}
	endOf(t, turn, "the turn")
	st.waitNeedsInput(t, ws, 0, workspace.AgentIdle, "idle after the turn")
	if strings.Contains(st.logs.String(), st.token.Value()) {
		t.Error("the log holds the MCP token")
	}
}

func TestRealOpencodeReconnectsWithARotatedToken(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{})
	ws, api := st.readyAgent(t, ctx, "rotate")
	session := api.newSession()
	statusCall := func(api agentAPI, session string) (result string) {
		t.Helper()
		n := len(model.Requests())
		if err := api.prompt(ctx, session, `CALL codehydra_workspace_get_status {}`); err != nil {
			t.Fatalf("turn: %v", err)
		}
		for _, r := range model.Requests()[n:] {
			if r.LastRole == "tool" {
				return r.LastText
			}
		}
		t.Fatalf("no tool result reached the model; requests: %+v", model.Requests()[n:])
		return ""
	}
	// The old token stops working at once: the running agent's calls fail.
	old := st.token.Value()
	if err := st.token.Rotate(); err != nil {
		t.Fatal(err)
	}
	if got := statusCall(api, session); strings.Contains(got, `"isDirty"`) {
		t.Fatalf("get_status with the old token = %q; want it refused", got)
	}
	// Restarted, each agent takes the new token and is connected again.
	pid := agentPID(t, ws.Path)
	st.sup.RestartAll()
	api = st.waitReady(t, ws, pid)
	if got := statusCall(api, session); !strings.Contains(got, `"isDirty"`) {
		t.Errorf("get_status after the restart = %q", got)
	}
	if logs := st.logs.String(); strings.Contains(logs, old) || strings.Contains(logs, st.token.Value()) {
		t.Error("the log holds an MCP token")
	}
}

// TestRealOpencodeAgentServerIsLocked pins docs/DESIGN.md's
// OPENCODE_SERVER_PASSWORD with the real opencode: an agent started by the
// supervisor answers 401 on every route to a request without its password
// (another user or process on the machine), 200 with it, and still became
// ready (health, MCP connected) and reports status, so the supervisor
// sends it everywhere. The password is in no log line and no agent record.
func TestRealOpencodeAgentServerIsLocked(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{})
	ws, api := st.readyAgent(t, ctx, "locked")
	if api.password == "" {
		t.Fatal("the agent's server has no password")
	}
	anonymous := api
	anonymous.password = ""
	wrong := api
	wrong.password = st.token.Value()
	for _, path := range []string{"/", "/global/health", "/session", "/event", "/mcp", "/config", "/file?path=.", "/provider", "/path", "/session/status"} {
		if got := anonymous.status(ctx, path); got != http.StatusUnauthorized {
			t.Errorf("GET %s without the password = %d, want 401", path, got)
		}
		if got := wrong.status(ctx, path); got != http.StatusUnauthorized {
			t.Errorf("GET %s with the MCP token as password = %d, want 401", path, got)
		}
		if got := api.status(ctx, path); got != http.StatusOK {
			t.Errorf("GET %s with the password = %d, want 200", path, got)
		}
	}
	if err := anonymous.do(ctx, http.MethodPost, "/session", map[string]any{}, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("POST /session without the password = %v, want 401", err)
	}

	// The event stream, read with the password, reports a turn.
	if err := api.prompt(ctx, api.newSession(), "hello"); err != nil {
		t.Fatal(err)
	}
	st.waitNeedsInput(t, ws, 0, workspace.AgentIdle, "the turn reported idle")

	var records []byte
	entries, _ := os.ReadDir(paths.AgentsDir())
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(paths.AgentsDir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, b...)
	}
	if len(records) == 0 {
		t.Fatal("no agent record to check")
	}
	if strings.Contains(string(records), api.password) || strings.Contains(st.logs.String(), api.password) {
		t.Errorf("the password is in the agent record or the log:\n%s\n%s", records, st.logs.String())
	}
}

// status is the status code of GET path, read without the body (a stream
// would never end).
func (a agentAPI) status(ctx context.Context, path string) int {
	a.t.Helper()
	// Generous: on a loaded machine opencode's first /provider took over
	// 10 s (a CI run with every package's tests at once); the test is
	// about the status, not the speed.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.password != "" {
		req.SetBasicAuth("opencode", a.password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
