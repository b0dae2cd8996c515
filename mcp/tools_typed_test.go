package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/pullrequest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/tasks"
	"codehydra/workspace"
)

// addTool (tools_typed.go) re-implements the typed handler of the SDK's
// sdk.AddTool for speed. These tests hold it to sdk.AddTool: a twin server
// on the same options, domain and token has the same handlers added
// through sdk.AddTool, and every call goes to both, through the go-sdk
// client over HTTP, so that a go-sdk upgrade that changes what sdk.AddTool
// answers fails here.

// registerWithSDK adds the tool through the SDK's own sdk.AddTool, bound
// to s: with the output schema addTool gives it (the success or the error
// shape), and the input schema the SDK derives itself from In when the
// declaration sets none.
func (h typedHandler[In, Out]) registerWithSDK(s *Server, t *sdk.Tool) {
	setOutputSchema[Out](t)
	sdk.AddTool(s.mcp, t, h.bound(s))
}

// sdkTwin is a second server on h's options, domain and token, whose tools
// are the same handlers added through sdk.AddTool.
func (h *harness) sdkTwin() *harness {
	h.t.Helper()
	o := h.srv.opts
	o.AuditPath = filepath.Join(h.t.TempDir(), "audit.jsonl")
	srv, err := New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, d := range toolDefs() {
		viaSDK, ok := d.handler.(interface{ registerWithSDK(*Server, *sdk.Tool) })
		if !ok {
			h.t.Fatalf("%s: its handler (%T) cannot be added through sdk.AddTool", d.tool.Name, d.handler)
		}
		viaSDK.registerWithSDK(srv, d.tool)
	}
	twin := *h
	twin.srv, twin.audit = srv, o.AuditPath
	twin.outputs = serveForTest(h.t, srv)
	return &twin
}

// sideBySide sends each call to the server with the tools as registerTools
// adds them (fast) and to its sdkTwin (viaSDK), and compares the answers.
type sideBySide struct {
	t            *testing.T
	fast, viaSDK *harness
	paths        map[string]string // workspace name → path
	sessions     map[[2]string]*sdk.ClientSession
}

// sideCall is one call made to both servers. In ws and args, {side}
// stands for a on the fast server and b on the twin, for calls that change
// what they act on (a workspace deleted, a project added): in the twin's
// answer, each word with b then reads a.
type sideCall struct {
	tool string
	// ws names the workspace whose token makes the call and whose path is
	// in X-Workspace-Path; "" is the user's token, without the header.
	ws string
	// args is the raw JSON of the arguments; "" sends none.
	args string
	// vary are the keys whose values change from run to run (durationMs),
	// left out of the comparison.
	vary []string
}

var sideWord = regexp.MustCompile(`[A-Za-z0-9_.-]*\{side\}[A-Za-z0-9_.-]*`)

// compare makes c on both servers and fails the test when the answers
// differ; it returns the fast server's.
func (s *sideBySide) compare(c sideCall) string {
	s.t.Helper()
	fast := s.answer(s.fast, c, "a")
	viaSDK := s.answer(s.viaSDK, c, "b")
	for _, w := range sideWord.FindAllString(c.ws+" "+c.args, -1) {
		viaSDK = strings.ReplaceAll(viaSDK, strings.ReplaceAll(w, "{side}", "b"), strings.ReplaceAll(w, "{side}", "a"))
	}
	if fast != viaSDK {
		s.t.Errorf("%s %s as %q: addTool and sdk.AddTool answer differently\naddTool:     %s\nsdk.AddTool: %s", c.tool, c.args, c.ws, fast, viaSDK)
	}
	// Wait for the work each server runs after its answer (a delete), so
	// that both calls of the next pair see the same state.
	s.fast.waitBackground()
	s.viaSDK.waitBackground()
	return fast
}

// answer makes c on h and returns what the client got, as comparable
// text: a protocol error's message, or the result with each text content
// that is JSON decoded, because sdk.AddTool re-marshals the output through
// a map, which sorts its keys, while toolHandler keeps the struct's order.
func (s *sideBySide) answer(h *harness, c sideCall, side string) string {
	s.t.Helper()
	ws := strings.ReplaceAll(c.ws, "{side}", side)
	key := [2]string{h.srv.URL(), ws}
	cs := s.sessions[key]
	if cs == nil {
		if ws == "" {
			cs = h.session("")
		} else {
			path, ok := s.paths[ws]
			if !ok {
				s.t.Fatalf("no workspace %s", ws)
			}
			cs = h.sessionAs(h.tokenOf(path), path)
		}
		s.sessions[key] = cs
	}
	params := &sdk.CallToolParams{Name: c.tool}
	if c.args != "" {
		params.Arguments = json.RawMessage(strings.ReplaceAll(c.args, "{side}", side))
	}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		return "protocol error: " + err.Error()
	}
	data, err := json.Marshal(res)
	if err != nil {
		s.t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		s.t.Fatal(err)
	}
	content, _ := v["content"].([]any)
	for _, item := range content {
		if m, ok := item.(map[string]any); ok {
			var decoded any
			if text, ok := m["text"].(string); ok && json.Unmarshal([]byte(text), &decoded) == nil {
				m["text"] = map[string]any{"JSON": decoded}
			}
		}
	}
	leaveOut(v, c.vary)
	out, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(out)
}

// leaveOut removes the keys from every object in v.
func leaveOut(v any, keys []string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if slices.Contains(keys, k) {
				delete(v, k)
				continue
			}
			leaveOut(x, keys)
		}
	case []any:
		for _, x := range v {
			leaveOut(x, keys)
		}
	}
}

// okAnswers takes every answer to request per_ok and knows no other.
type okAnswers struct{}

func (okAnswers) Answer(_ context.Context, _, id string, _ workspace.Reply) error {
	if id != "per_ok" {
		return workspace.Errorf(workspace.CodeConflict, "no pending request %q", id)
	}
	return nil
}

// newSideBySide is a project with workspaces for every tool to act on,
// served by a server and its sdkTwin: eq, which both share (for the calls
// that change nothing, or change it the same way twice); and for calls
// that change what they act on, one workspace each: gen-a and gen-b,
// del-a and del-b, and pre-a and pre-b on branches that existed before
// them.
func newSideBySide(t *testing.T) *sideBySide {
	sessions := &fakeSessions{delivery: map[string]workspace.PromptDelivery{}, replies: map[string]string{}, sessions: map[string]string{}}
	agents := portAgents{}
	h := newHarnessWith(t, readyAgents{}, func(o *Options) {
		o.Sessions, o.Agents = sessions, agents
		o.Hibernation = newSleepyAgents()
		o.Prompts = &promptRecorder{model: "anthropic/claude", queued: map[string]workspace.FirstPrompt{}}
		o.Reviews = newReviewRecorder()
		o.Answers = okAnswers{}
		// Both servers get the same calls many times over.
		o.RateLimit, o.Burst = 1e6, 1e6
		// The project has no remote: a pull request's answer is a note.
		o.PullRequests = pullrequest.New(pullrequest.Options{Workspaces: o.Workspaces.(*workspace.Manager), Settings: settings.Default})
	})
	paths := map[string]string{}
	for _, name := range []string{"pre-a", "pre-b"} {
		testenv.Git(t, h.project, "branch", name)
	}
	for _, name := range []string{"eq", "gen-a", "gen-b", "del-a", "del-b", "pre-a", "pre-b"} {
		paths[name] = h.create(name).Path
	}
	eq := paths["eq"]
	writeFiles(t, eq, map[string]string{
		"Makefile": "hello:\n\t@echo hello\nfail:\n\t@echo failing; exit 7\n",
		"src/a.go": "package a\n", ".env": "TOKEN=1\n", "bin.dat": "\x00\x01\x02",
	})
	agents[eq] = 4100
	sessions.sessions[eq] = "ses_eq"
	sessions.delivery[paths["gen-a"]] = workspace.PromptDelivery{State: workspace.DeliveryDelivered, SessionID: "ses_1"}
	sessions.replies[eq] = "a reply longer than ten bytes"
	for _, name := range []string{"gen-a", "gen-b"} {
		testenv.Git(t, paths[name], "config", "branch."+name+".codehydra.createdBy", eq)
	}
	// A background run that has ended, which both servers see (they
	// share the runs): its listing, output and stop are the same twice.
	if _, err := h.srv.opts.Runs.Start(t.Context(), tasks.StartOptions{Workspace: eq, Name: "make:hello", Dir: eq, Argv: []string{"make", "--", "hello"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the background run of make:hello to end", func() bool { return h.srv.opts.Runs.List(eq)[0].State != tasks.StateRunning })
	return &sideBySide{t: t, fast: h, viaSDK: h.sdkTwin(), paths: paths, sessions: map[[2]string]*sdk.ClientSession{}}
}

// TestToolsListIsTheSameThroughSDKAddTool: the schemas addTool derives
// from the input types are the ones sdk.AddTool derives, and addTool
// leaves every declaration as sdk.AddTool leaves it.
func TestToolsListIsTheSameThroughSDKAddTool(t *testing.T) {
	s := newSideBySide(t)
	lists := [2][]byte{}
	for i, h := range []*harness{s.fast, s.viaSDK} {
		res, err := h.session("").ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != len(toolDefs()) {
			t.Fatalf("tools/list has %d tools, want %d", len(res.Tools), len(toolDefs()))
		}
		lists[i] = mustJSON(t, res)
	}
	if string(lists[0]) != string(lists[1]) {
		t.Fatalf("tools/list differs:\naddTool:     %s\nsdk.AddTool: %s", lists[0], lists[1])
	}
}

// TestTypedToolsAnswerAsSDKAddToolDoes makes, for every tool, calls with
// arguments the input schema refuses (none, null, not an object, an
// unknown field, each property with values of every JSON type), calls that
// pass the schema but not the decoding into the input type, calls that
// succeed (structuredContent and the text content) and calls whose
// handler fails (isError), on a server and on its sdkTwin, and requires
// the same answer from both.
func TestTypedToolsAnswerAsSDKAddToolDoes(t *testing.T) {
	s := newSideBySide(t)
	extra := t.TempDir()
	for _, name := range []string{"extra-a", "extra-b"} {
		dir := filepath.Join(extra, name)
		testenv.Git(t, "", "init", "-q", "-b", "main", dir)
		testenv.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "initial commit")
	}
	extra, err := filepath.EvalSymlinks(extra)
	if err != nil {
		t.Fatal(err)
	}
	// Beside these, argumentCalls calls every tool with no arguments, {}
	// and null: for a tool that takes none, that is its success.
	calls := []sideCall{
		{tool: ToolSetMetadata, ws: "eq", args: `{"key":"note","value":"v"}`},
		{tool: ToolSetMetadata, ws: "eq", args: `{"key":"note","value":null}`},
		{tool: ToolSetMetadata, ws: "eq", args: `{"key":"9note","value":"v"}`},
		{tool: ToolSetMetadata, ws: "eq", args: `{"key":"createdBy","value":"v"}`},
		{tool: ToolGetOpencodePort, ws: "gen-{side}"},
		{tool: ToolProjectList},
		{tool: ToolCreate, ws: "eq", args: `{"name":"made-{side}","initialPrompt":"do it"}`},
		{tool: ToolCreate, ws: "eq", args: `{"name":"eq"}`},
		{tool: ToolCreate, ws: "eq", args: `{"name":"bad..name"}`},
		{tool: ToolCreate, ws: "eq", args: `{"name":"x","initialPrompt":{"prompt":"go","modle":"a/b"}}`},
		{tool: ToolCreate, ws: "eq", args: `{"name":"x","projectPath":"/elsewhere"}`},
		{tool: ToolList},
		{tool: ToolAgentSession, ws: "gen-{side}"},
		{tool: ToolRestartAgent, ws: "eq"},
		{tool: ToolLog, ws: "eq", args: `{"level":"info","message":"hello","context":{"step":1,"ok":true}}`},
		{tool: ToolLog, ws: "eq", args: `{"level":"info","message":"hello","context":{"9bad":1}}`},
		{tool: ToolRunTask, ws: "eq", args: `{"name":"make:hello"}`, vary: []string{"durationMs"}},
		{tool: ToolRunTask, ws: "eq", args: `{"name":"make:fail"}`, vary: []string{"durationMs"}},
		{tool: ToolRunTask, ws: "eq", args: `{"name":"make:nope"}`},
		{tool: ToolRunTask, ws: "eq", args: `{"name":"make:hello","args":["$(x)"]}`},
		{tool: ToolProjectAdd, args: `{"path":"` + filepath.Join(extra, "extra-{side}") + `"}`},
		{tool: ToolProjectAdd, args: `{"path":"` + filepath.Join(extra, "extra-{side}") + `"}`},
		{tool: ToolProjectAdd, args: `{"path":"relative/path"}`},
		{tool: ToolProjectList},
		{tool: ToolProjectRemove, args: `{"path":"` + filepath.Join(extra, "extra-{side}") + `"}`},
		{tool: ToolProjectRemove, args: `{"path":"` + filepath.Join(extra, "extra-{side}") + `"}`},
		{tool: ToolReadFile, ws: "eq", args: `{"path":"README.md"}`},
		{tool: ToolReadFile, ws: "eq", args: `{"path":"README.md","offset":2,"limit":2}`},
		{tool: ToolReadFile, ws: "eq", args: `{"path":"bin.dat"}`},
		{tool: ToolReadFile, ws: "eq", args: `{"path":"../x"}`},
		{tool: ToolReadFile, ws: "eq", args: `{"path":".env"}`},
		{tool: ToolReadFile, ws: "eq", args: `{"Path":"README.md"}`},
		{tool: ToolReadFile, ws: "eq", args: `{"path":"README.md","offset":1e30}`},
		{tool: ToolListDirectory, ws: "eq", args: `{"path":"."}`},
		{tool: ToolListDirectory, ws: "eq", args: `{"path":"src","depth":3}`},
		{tool: ToolListDirectory, ws: "eq", args: `{"path":"nope"}`},
		{tool: ToolMerge, ws: "eq", args: `{"workspace":"` + s.paths["gen-a"] + `","preflight":true}`},
		{tool: ToolMerge, ws: "eq", args: `{"workspace":"` + s.paths["eq"] + `"}`},
		{tool: ToolUpdateFromBase, ws: "eq", args: `{"workspace":"` + s.paths["gen-a"] + `","mode":"merge"}`},
		{tool: ToolUpdateFromBase, ws: "eq", args: `{"mode":"sideways"}`},
		{tool: ToolDelete, ws: "pre-{side}", args: `{"deleteBranch":true}`},
		{tool: ToolDelete, ws: "del-{side}", args: `{}`},
		{tool: ToolSendReview, ws: "eq", args: `{"workspace":"` + strings.Replace(s.paths["gen-a"], "gen-a", "gen-{side}", 1) + `","summary":"ok"}`},
		{tool: ToolSendReview, ws: "eq", args: `{"workspace":"` + s.paths["eq"] + `","summary":"ok"}`},
		{tool: ToolCreatePR, ws: "eq", args: `{"title":"t"}`},
		{tool: ToolCreatePR, ws: "eq", args: `{"body":"a body without a title"}`},
		{tool: ToolAnswer, ws: "eq", args: `{"workspace":"` + s.paths["gen-a"] + `","requestId":"per_ok","reply":{"permission":"once"}}`},
		{tool: ToolAnswer, ws: "eq", args: `{"workspace":"` + s.paths["gen-a"] + `","requestId":"per_gone","reply":{"permission":"once"}}`},
		{tool: ToolAnswer, ws: "eq", args: `{"workspace":"` + s.paths["eq"] + `","requestId":"per_ok","reply":{"permission":"once"}}`},
		{tool: ToolHibernate, ws: "eq", args: `{"workspace":"` + strings.Replace(s.paths["gen-a"], "gen-a", "gen-{side}", 1) + `"}`},
		{tool: ToolWake, ws: "eq", args: `{"workspace":"` + strings.Replace(s.paths["gen-a"], "gen-a", "gen-{side}", 1) + `"}`},
		{tool: ToolStopTask, ws: "eq", args: `{"name":"make:hello"}`},
		{tool: ToolStopTask, ws: "eq", args: `{"name":"make:nope"}`},
		{tool: ToolTaskOutput, ws: "eq", args: `{"name":"make:hello","offset":2,"maxBytes":2}`},
	}
	calls = append(argumentCalls(t, s.fast.srv), calls...)
	called := map[string]map[string]bool{}
	for _, c := range calls {
		if called[c.tool] == nil {
			called[c.tool] = map[string]bool{}
		}
		called[c.tool][outcome(t, s.compare(c))] = true
	}
	// Each tool was called with arguments it refuses, and it answered; a
	// tool with an action that can fail failed too.
	for _, d := range toolDefs() {
		got := called[d.tool.Name]
		if !got["refused"] || !got["success"] {
			t.Errorf("%s: the calls made did not both succeed and have their arguments refused: %v", d.tool.Name, got)
		}
	}
	for _, tool := range []string{ToolSetMetadata, ToolCreate, ToolLog, ToolRunTask, ToolProjectAdd, ToolProjectRemove, ToolReadFile, ToolListDirectory, ToolDelete, ToolSendReview, ToolAnswer, ToolStopTask, ToolTaskOutput} {
		if !called[tool]["failed"] {
			t.Errorf("%s: no call made its handler fail", tool)
		}
	}
}

// outcome classifies an answer of sideBySide.answer: success, refused
// (invalid arguments), or failed (any other error).
func outcome(t *testing.T, answer string) string {
	t.Helper()
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Error errorBody `json:"error"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(answer), &res); err != nil {
		t.Fatalf("answer %s: %v", answer, err)
	}
	switch {
	case !res.IsError:
		return "success"
	case res.StructuredContent.Error.Code == string(workspace.CodeInvalidInput) &&
		strings.HasPrefix(res.StructuredContent.Error.Message, "invalid arguments: "):
		return "refused"
	default:
		return "failed"
	}
}

// argumentCalls are, for every tool, calls with arguments of every shape:
// none, {}, null, values that are not objects, an unknown field, and each
// property in turn given a value of each JSON type (beside valid values of
// the others). A tool that only reads gets them all: some pass its schema
// and run it, some pass the schema and still do not decode into the input
// type (1e30 for an int). A tool that acts gets only those its schema
// refuses, so that none of them acts.
func argumentCalls(t *testing.T, srv *Server) []sideCall {
	t.Helper()
	valid := map[string]map[string]any{
		ToolSetMetadata: {"key": "note", "value": "v"},
		ToolCreate:      {"name": "made"},
		ToolLog:         {"level": "info", "message": "m"},
		ToolRunTask:     {"name": "make:hello"},
		ToolProjectAdd:  {"path": "/no/such/project"},
		ToolReadFile:    {"path": "README.md"},
		ToolSendReview:  {"workspace": "/no/such/workspace", "summary": "ok"},
		ToolStopTask:    {"name": "make:hello"},
		ToolTaskOutput:  {"name": "make:hello"},
	}
	valid[ToolProjectRemove] = valid[ToolProjectAdd]
	values := []any{nil, true, 7, -1, 1.5, 1e30, "x", "", []any{1}, map[string]any{"a": 1}}
	var calls []sideCall
	for _, d := range toolDefs() {
		def := srv.tools[d.tool.Name]
		schema, err := def.tool.InputSchema.(*jsonschema.Schema).Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		readOnly := def.tool.Annotations != nil && def.tool.Annotations.ReadOnlyHint
		ws := "eq"
		switch {
		case def.userOnly:
			ws = ""
		case !readOnly:
			ws = "gen-{side}"
		}
		add := func(args string) {
			if readOnly || refuses(t, schema, args) {
				calls = append(calls, sideCall{tool: d.tool.Name, ws: ws, args: args})
			}
		}
		for _, args := range []string{"", `{}`, `null`, `[]`, `"x"`, `7`} {
			add(args)
		}
		base := valid[d.tool.Name]
		add(string(mustJSON(t, with(base, "unknownField", 1))))
		for _, p := range slices.Sorted(func(yield func(string) bool) {
			for k := range schema.Schema().Properties {
				if !yield(k) {
					return
				}
			}
		}) {
			for _, v := range values {
				add(string(mustJSON(t, with(base, p, v))))
			}
		}
	}
	return calls
}

// with is a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}

// refuses reports whether schema refuses the arguments args ("" for
// none), which are refused too when they are not an object.
func refuses(t *testing.T, schema *jsonschema.Resolved, args string) bool {
	t.Helper()
	m := map[string]any{}
	if args != "" {
		if err := json.Unmarshal([]byte(args), &m); err != nil {
			return true
		}
	}
	var v any = m
	if m == nil {
		v = map[string]any{}
	}
	return schema.Validate(&v) != nil
}

// BenchmarkDecodeArguments is the check and decode of a tool's arguments
// (workspace_set_metadata's): its B/op is the garbage that each call with
// arguments makes before its handler runs.
func BenchmarkDecodeArguments(b *testing.B) {
	check, err := newInputCheck(setMetadataSchema())
	if err != nil {
		b.Fatal(err)
	}
	raw := json.RawMessage(`{"key":"ticket","value":"ABC-123"}`)
	b.ReportAllocs()
	for b.Loop() {
		var in setMetadataInput
		if err := check.decode(raw, &in); err != nil || in.Key != "ticket" || in.Value == nil || *in.Value != "ABC-123" {
			b.Fatalf("%v %+v", err, in)
		}
	}
}
