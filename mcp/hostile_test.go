package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// The hostile battery: every request an attacker or a broken client might
// send, each of which must get a clean refusal — a 4xx, a JSON-RPC error
// or a tool error — and never a 5xx, a panic, a hang or a success. After
// the battery the server must still serve a normal client, and nothing the
// refused requests named may have changed.

// refusal is what a hostile request must get.
type refusal string

const (
	// refusedHTTP: the HTTP layer or the SDK answered 4xx.
	refusedHTTP refusal = "http-4xx"
	// refusedRPC: a JSON-RPC error (the request reached the protocol).
	refusedRPC refusal = "jsonrpc-error"
	// refusedTool* : a tool result with isError and this code.
	refusedInvalid  refusal = "tool:" + refusal(workspace.CodeInvalidInput)
	refusedNotFound refusal = "tool:" + refusal(workspace.CodeWorkspaceNotFound)
	refusedProject  refusal = "tool:" + refusal(workspace.CodeProjectNotFound)
	refusedForbid   refusal = "tool:" + refusal(workspace.CodeForbidden)
	refusedLimited  refusal = "tool:" + refusal(workspace.CodeRateLimited)
)

// hostileAnswerWithin bounds how long any hostile request may take: a
// request that keeps the server busy for longer is a denial of service even
// if it ends in a refusal.
const hostileAnswerWithin = 5 * time.Second

// reply is the server's answer to one raw request.
type reply struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
	msgs   []map[string]any // JSON-RPC messages in the body (JSON or SSE)
	// closes says that the server closes the connection after it.
	closes bool
}

// classify says how the server answered: a refusal kind, or "success"
// and what it was.
func (r reply) classify() (refusal, string) {
	switch {
	case r.status >= 500:
		return "", fmt.Sprintf("HTTP %d: %s", r.status, r.body)
	case r.status >= 400:
		return refusedHTTP, strconv.Itoa(r.status)
	}
	for _, m := range r.msgs {
		if _, ok := m["error"]; ok {
			return refusedRPC, fmt.Sprint(m["error"])
		}
		res, ok := m["result"].(map[string]any)
		if !ok {
			continue
		}
		if res["isError"] != true {
			return "", fmt.Sprintf("success: %.300v", res)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		e, _ := sc["error"].(map[string]any)
		code, _ := e["code"].(string)
		msg, _ := e["message"].(string)
		if code == "" || msg == "" {
			return "", fmt.Sprintf("tool error without code or message: %.300v", res)
		}
		return refusal("tool:" + code), msg
	}
	if r.status == http.StatusAccepted {
		return refusedHTTP, "202 for a notification"
	}
	return "", fmt.Sprintf("HTTP %d without a JSON-RPC answer: %.300s", r.status, r.body)
}

// send posts one raw request. hdr is used as is (no token unless given).
func (h *harness) send(method string, hdr http.Header, body io.Reader) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL(), body)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if host := hdr.Get("Host"); host != "" {
		req.Host = host
	}
	client := &http.Client{Transport: newTransport(h.t), Timeout: 3 * hostileAnswerWithin}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read answer: %v", err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start), msgs: jsonRPCMessages(b), closes: resp.Close}
}

// jsonRPCMessages reads the messages of a JSON or text/event-stream body.
func jsonRPCMessages(b []byte) []map[string]any {
	var one map[string]any
	if json.Unmarshal(b, &one) == nil {
		return []map[string]any{one}
	}
	var msgs []map[string]any
	for line := range strings.Lines(string(b)) {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:")
		if !ok {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &m) == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// rawSession opens an MCP session by hand with the master token and
// returns the headers that address it.
func (h *harness) rawSession() http.Header {
	h.t.Helper()
	return h.rawSessionAs(h.token.Value())
}

// rawSessionAs is rawSession with token.
func (h *harness) rawSessionAs(token string) http.Header {
	h.t.Helper()
	hdr := mcpHeaders()
	hdr.Set("Authorization", "Bearer "+token)
	r := h.send(http.MethodPost, hdr, strings.NewReader(initializeBody))
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		h.t.Fatalf("initialize: HTTP %d, session %q: %s", r.status, id, r.body)
	}
	hdr.Set("Mcp-Session-Id", id)
	hdr.Set("Mcp-Protocol-Version", "2025-06-18")
	if r := h.send(http.MethodPost, hdr, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.status != http.StatusAccepted {
		h.t.Fatalf("initialized: HTTP %d: %s", r.status, r.body)
	}
	return hdr
}

// toolCall is the body of a tools/call with raw JSON arguments.
func toolCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// rawTCP sends bytes as they are and returns the status line's code, or
// an error when no answer came.
func (h *harness) rawTCP(request string) (int, error) {
	h.t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.srv.Port())), 5*time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		h.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, fmt.Errorf("read answer to raw request: %w", err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestHostileRequestsGetACleanRefusalAndTheServerKeepsServing(t *testing.T) {
	// The rate limit is raised so that each request meets the check it is
	// aimed at rather than the limiter (TestRateLimitIsPerWorkspaceAndTool
	// covers the limiter).
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e6, 1e6 })
	ws, other := h.create("target"), h.create("other")
	testenv.Git(t, h.project, "config", "branch.target.codehydra.note", "original")
	testenv.Git(t, h.project, "config", "branch.other.codehydra.note", "untouched")

	outside := t.TempDir()
	sibling := ws.Path + "-evil"
	sub := filepath.Join(ws.Path, "sub")
	for _, d := range []string{sibling, sub} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	linkOut := filepath.Join(t.TempDir(), "link-out")
	if err := os.Symlink(outside, linkOut); err != nil {
		t.Fatal(err)
	}
	// A hard link in the workspace to a file of the user's outside it.
	testenv.WriteFile(t, filepath.Join(outside, "id_rsa"), "PRIVATE KEY")
	if err := os.Link(filepath.Join(outside, "id_rsa"), filepath.Join(ws.Path, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(h.srv.Port())
	auth := func() http.Header { return h.authHeader(mcpHeaders()) }
	with := func(hdr http.Header, kv ...string) http.Header {
		for i := 0; i+1 < len(kv); i += 2 {
			hdr.Set(kv[i], kv[i+1])
		}
		return hdr
	}

	var requests, wrong int
	var slowest time.Duration
	check := func(t *testing.T, name string, r reply, want refusal) {
		t.Helper()
		requests++
		slowest = max(slowest, r.took)
		got, detail := r.classify()
		if got != want {
			wrong++
		}
		if got == "" {
			t.Errorf("%s: not refused: %s", name, detail)
			return
		}
		if got != want {
			t.Errorf("%s: refused as %s (%s), want %s", name, got, detail, want)
		}
		if r.took > hostileAnswerWithin {
			t.Errorf("%s: the answer took %s", name, r.took.Round(time.Millisecond))
		}
	}

	t.Run("HTTP layer", func(t *testing.T) {
		init := func() io.Reader { return strings.NewReader(initializeBody) }
		tests := []struct {
			name   string
			method string
			hdr    http.Header
			body   io.Reader
			status int
		}{
			{"no token", http.MethodPost, mcpHeaders(), init(), 401},
			{"wrong token", http.MethodPost, with(mcpHeaders(), "Authorization", "Bearer "+strings.Repeat("f", 64)), init(), 401},
			{"token of another scheme", http.MethodPost, with(mcpHeaders(), "Authorization", "Basic "+h.token.Value()), init(), 401},
			{"token with a suffix", http.MethodPost, with(mcpHeaders(), "Authorization", "Bearer "+h.token.Value()+"0"), init(), 401},
			{"huge token", http.MethodPost, with(mcpHeaders(), "Authorization", "Bearer "+strings.Repeat("a", 50<<10)), init(), 401},
			{"cross-site Origin", http.MethodPost, with(auth(), "Origin", "https://evil.example"), init(), 403},
			{"null Origin", http.MethodPost, with(auth(), "Origin", "null"), init(), 403},
			{"Sec-Fetch-Site cross-site", http.MethodPost, with(auth(), "Sec-Fetch-Site", "cross-site"), init(), 403},
			{"cross-site GET", http.MethodGet, with(auth(), "Origin", "https://evil.example"), nil, 403},
			{"foreign Host", http.MethodPost, with(auth(), "Host", "evil.example:"+port), init(), 403},
			{"rebinding Host", http.MethodPost, with(auth(), "Host", "127.0.0.1.evil.example:"+port), init(), 403},
			{"Host with another port", http.MethodPost, with(auth(), "Host", "127.0.0.1:1"), init(), 403},
			{"oversized body", http.MethodPost, auth(), strings.NewReader(`{"x":"` + strings.Repeat("a", 2<<20) + `"}`), 413},
			{"oversized chunked body", http.MethodPost, auth(), io.MultiReader(strings.NewReader(`{"x":"` + strings.Repeat("a", 2<<20) + `"}`)), 413},
			{"malformed JSON", http.MethodPost, auth(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":`), 400},
			{"not JSON at all", http.MethodPost, auth(), strings.NewReader("\x00\x01\x02 binary"), 400},
			{"empty body", http.MethodPost, auth(), strings.NewReader(""), 400},
			{"JSON null", http.MethodPost, auth(), strings.NewReader(`null`), 400},
			{"JSON-RPC batch of garbage", http.MethodPost, auth(), strings.NewReader(`[1,"two",{},null,[],{"jsonrpc":"1.0"}]`), 400},
			{"empty batch", http.MethodPost, auth(), strings.NewReader(`[]`), 400},
			{"tools/call without a session", http.MethodPost, auth(), strings.NewReader(toolCall(1, ToolGetStatus, `{}`)), 200},
			{"wrong JSON-RPC version", http.MethodPost, auth(), strings.NewReader(strings.Replace(initializeBody, `"2.0"`, `"1.0"`, 1)), 400},
			{"unknown session", http.MethodPost, with(auth(), "Mcp-Session-Id", "no-such-session"), strings.NewReader(toolCall(1, ToolGetStatus, `{}`)), 404},
			{"wrong content type", http.MethodPost, with(auth(), "Content-Type", "text/plain"), init(), 415},
			{"GET without a session", http.MethodGet, auth(), nil, 400},
			{"DELETE without a session", http.MethodDelete, auth(), nil, 400},
			{"PUT", http.MethodPut, auth(), init(), 405},
		}
		for _, tc := range tests {
			r := h.send(tc.method, tc.hdr, tc.body)
			want := refusedHTTP
			if tc.status == http.StatusOK {
				want = refusedRPC
			}
			check(t, tc.name, r, want)
			if r.status != tc.status {
				t.Errorf("%s: HTTP %d, want %d: %.200s", tc.name, r.status, tc.status, r.body)
			}
			// A refusal before the token is accepted holds no connection.
			if (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden) && !r.closes {
				t.Errorf("%s: HTTP %d, and the connection stays open", tc.name, r.status)
			}
		}
	})

	t.Run("below HTTP", func(t *testing.T) {
		req := func(extra string) string {
			return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nAuthorization: Bearer " + h.token.Value() +
				"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" + extra +
				"Content-Length: " + strconv.Itoa(len(initializeBody)) + "\r\n\r\n" + initializeBody
		}
		tests := []struct {
			name    string
			request string
			status  int
		}{
			{"NUL byte in X-Workspace-Path", req("X-Workspace-Path: " + ws.Path + "\x00/../x\r\n"), 400},
			{"CR inside a header value", req("X-Workspace-Path: " + ws.Path + "\rX-Other: 1\r\n"), 400},
			{"header block over the limit", req("X-Workspace-Path: /" + strings.Repeat("a", 70<<10) + "\r\n"), 431},
			{"two Content-Lengths", req("Content-Length: 1\r\n"), 400},
			{"no Host", "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400},
		}
		for _, tc := range tests {
			requests++
			if got, err := h.rawTCP(tc.request); err != nil || got != tc.status {
				wrong++
				t.Errorf("%s: HTTP %d (%v), want %d", tc.name, got, err, tc.status)
			}
		}
		if n := h.srv.Sessions(); n != 0 {
			t.Errorf("%d sessions opened by malformed requests", n)
		}
	})

	t.Run("protocol", func(t *testing.T) {
		hdr := h.rawSession()
		tests := []struct {
			name string
			body string
			want refusal
		}{
			{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"workspace/delete_everything","params":{}}`, refusedHTTP},
			{"unknown method in a known namespace", `{"jsonrpc":"2.0","id":2,"method":"tools/delete","params":{}}`, refusedHTTP},
			{"missing prompt", `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"x"}}`, refusedRPC},
			{"sampling sent to the server", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`, refusedHTTP},
			{"second initialize", initializeBody, refusedRPC},
			{"batch of garbage in a session", `[1,"two",{},null]`, refusedHTTP},
			{"batch of tool calls in a session", "[" + toolCall(30, ToolProjectList, `{}`) + "," + toolCall(31, ToolProjectList, `{}`) + "]", refusedHTTP},
			{"unknown tool", toolCall(4, "rm_rf", `{}`), refusedRPC},
			{"tool name of 100 KB", toolCall(5, strings.Repeat("x", 100<<10), `{}`), refusedRPC},
			{"params not an object", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1,2]}`, refusedRPC},
			{"no tool name", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}`, refusedRPC},
			{"arguments not an object", toolCall(8, ToolProjectList, `[1,2,3]`), refusedInvalid},
			{"id of the wrong type", `{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, refusedHTTP},
			{"a response sent to the server", `{"jsonrpc":"2.0","id":99,"result":{}}`, refusedHTTP},
			{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/evil","params":{}}`, refusedHTTP},
		}
		for _, tc := range tests {
			check(t, tc.name, h.send(http.MethodPost, hdr, strings.NewReader(tc.body)), tc.want)
		}
	})

	t.Run("tool arguments", func(t *testing.T) {
		hdr := h.rawSession()
		hdr.Set(WorkspaceHeader, ws.Path)
		mb := strings.Repeat("k", 1_000_000) // within the 1 MiB body limit
		kb100 := strings.Repeat("v", 100<<10)
		deepPath := strings.Repeat("/a", 500_000)
		tests := []struct {
			name string
			tool string
			args string
			want refusal
		}{
			{"key of the wrong type", ToolSetMetadata, `{"key":42,"value":"x"}`, refusedInvalid},
			{"value of the wrong type", ToolSetMetadata, `{"key":"k","value":{"nested":true}}`, refusedInvalid},
			{"value an array", ToolSetMetadata, `{"key":"k","value":["a"]}`, refusedInvalid},
			{"key missing", ToolSetMetadata, `{"value":"x"}`, refusedInvalid},
			{"key null", ToolSetMetadata, `{"key":null,"value":"x"}`, refusedInvalid},
			{"extra argument", ToolSetMetadata, `{"key":"k","value":"x","path":"/etc"}`, refusedInvalid},
			{"key of 1 MB", ToolSetMetadata, `{"key":"` + mb + `","value":"x"}`, refusedInvalid},
			{"value of 100 KB", ToolSetMetadata, `{"key":"note","value":"` + kb100 + `"}`, refusedInvalid},
			{"value of 1 MB", ToolSetMetadata, `{"key":"note","value":"` + mb + `"}`, refusedInvalid},
			{"value with a newline", ToolSetMetadata, `{"key":"note","value":"a\nb"}`, refusedInvalid},
			{"value with NUL", ToolSetMetadata, `{"key":"note","value":"a\u0000b"}`, refusedInvalid},
			{"key injecting a config section", ToolSetMetadata, `{"key":"x.evil","value":"1"}`, refusedInvalid},
			{"base deleted", ToolSetMetadata, `{"key":"base","value":null}`, refusedInvalid},
			{"base as an option", ToolSetMetadata, `{"key":"base","value":"--upload-pack=touch /tmp/pwned"}`, refusedInvalid},
			{"keepBranch a string", ToolDelete, `{"keepBranch":"yes"}`, refusedInvalid},
			{"keepBranch a number", ToolDelete, `{"keepBranch":1}`, refusedInvalid},
			{"status with arguments", ToolGetStatus, `{"path":"/etc"}`, refusedInvalid},
			{"argument name of 1 MB", ToolGetStatus, `{"` + mb + `":1}`, refusedInvalid},
			{"create: name of the wrong type", ToolCreate, `{"projectPath":"` + h.project + `","name":123}`, refusedInvalid},
			{"create: name of 100 KB", ToolCreate, `{"projectPath":"` + h.project + `","name":"` + kb100 + `"}`, refusedInvalid},
			{"create: name as an option", ToolCreate, `{"projectPath":"` + h.project + `","name":"--force"}`, refusedInvalid},
			{"create: name climbing out", ToolCreate, `{"projectPath":"` + h.project + `","name":"../../escape"}`, refusedInvalid},
			{"create: base as an option", ToolCreate, `{"projectPath":"` + h.project + `","name":"ok-name","base":"--orphan"}`, refusedInvalid},
			{"create: base of 100 KB", ToolCreate, `{"projectPath":"` + h.project + `","name":"ok-name","base":"` + kb100 + `"}`, refusedInvalid},
			{"create: project path of 1 MB", ToolCreate, `{"projectPath":"/` + mb + `","name":"ok-name"}`, refusedInvalid},
			{"create: project path of 500,000 parts", ToolCreate, `{"projectPath":"` + deepPath + `","name":"ok-name"}`, refusedInvalid},
			{"create: relative project", ToolCreate, `{"projectPath":"proj","name":"ok-name"}`, refusedInvalid},
			{"create: unknown project", ToolCreate, `{"projectPath":"` + outside + `","name":"ok-name"}`, refusedProject},
			{"add: project path of 500,000 parts", ToolProjectAdd, `{"path":"` + deepPath + `"}`, refusedInvalid},
			{"add: a file as project", ToolProjectAdd, `{"path":"` + filepath.Join(h.project, "README.md") + `"}`, refusedInvalid},
			{"add: a workspace as project", ToolProjectAdd, `{"path":"` + ws.Path + `"}`, refusedInvalid},
			{"remove: project path of 500,000 parts", ToolProjectRemove, `{"path":"` + deepPath + `"}`, refusedInvalid},
			{"remove: path with NUL", ToolProjectRemove, `{"path":"/tmp\u0000x"}`, refusedInvalid},
		}
		if runtime.GOOS != "windows" { // where a file's names are not counted
			tests = append(tests, struct {
				name, tool, args string
				want             refusal
			}{"read: a hard link out", ToolReadFile, `{"path":"linked.txt"}`, refusedForbid})
		}
		for i, tc := range tests {
			check(t, tc.name, h.send(http.MethodPost, hdr, strings.NewReader(toolCall(100+i, tc.tool, tc.args))), tc.want)
		}
	})

	t.Run("X-Workspace-Path", func(t *testing.T) {
		hdr := h.rawSession()
		tests := []struct {
			name   string
			values []string // nil: no header
			want   refusal
		}{
			{"missing", nil, refusedInvalid},
			{"empty", []string{""}, refusedInvalid},
			{"relative", []string{"proj/workspaces/target"}, refusedInvalid},
			{"dot-dot back into the workspace", []string{ws.Path + "/../" + filepath.Base(ws.Path)}, refusedInvalid},
			{"dot-dot to the other workspace", []string{ws.Path + "/../" + filepath.Base(other.Path)}, refusedInvalid},
			{"dot-dot out", []string{ws.Path + "/.."}, refusedInvalid},
			{"encoded dot-dot", []string{ws.Path + "/%2e%2e"}, refusedNotFound},
			{"sibling with the workspace as prefix", []string{sibling}, refusedNotFound},
			{"prefix of the workspace", []string{ws.Path[:len(ws.Path)-1]}, refusedNotFound},
			{"subfolder", []string{sub}, refusedNotFound},
			{"symlink out", []string{linkOut}, refusedNotFound},
			{"main checkout", []string{h.project}, refusedNotFound},
			{"the file system root", []string{"/"}, refusedNotFound},
			{"a file in the workspace", []string{filepath.Join(ws.Path, "README.md")}, refusedNotFound},
			{"upper-cased (case-sensitive file system)", []string{strings.ToUpper(ws.Path)}, refusedNotFound},
			{"very long", []string{"/" + strings.Repeat("a", 10<<10)}, refusedInvalid},
			{"very long, many parts", []string{strings.Repeat("/a", 20<<10)}, refusedInvalid},
			{"two headers", []string{ws.Path, other.Path}, refusedInvalid},
			{"two headers, one good", []string{"/nope", ws.Path}, refusedInvalid},
		}
		tools := []struct{ name, args string }{
			{ToolGetStatus, `{}`}, {ToolGetMetadata, `{}`}, {ToolSetMetadata, `{"key":"note","value":"hijacked"}`},
			{ToolGetOpencodePort, `{}`}, {ToolDelete, `{}`},
		}
		for i, tc := range tests {
			for j, tool := range tools {
				hh := hdr.Clone()
				hh.Del(WorkspaceHeader)
				for _, v := range tc.values {
					hh.Add(WorkspaceHeader, v)
				}
				check(t, tc.name+" / "+tool.name, h.send(http.MethodPost, hh, strings.NewReader(toolCall(1000+10*i+j, tool.name, tool.args))), tc.want)
			}
		}
	})

	t.Run("workspace tokens", func(t *testing.T) { hostileWorkspaceTokens(t, h, ws, other, check) })
	t.Run("removed workspace and rate limit", func(t *testing.T) { hostileGoneAndLimited(t, check) })
	t.Run("the user's branch", func(t *testing.T) { hostileUserBranch(t, check) })

	t.Logf("FIGURE hostile: requests=%d not-refused-as-expected=%d slowest-answer=%s", requests, wrong, slowest.Round(time.Millisecond))

	// Nothing the refused requests named has changed.
	for _, w := range []workspace.Workspace{ws, other} {
		if _, err := os.Stat(w.Path); err != nil {
			t.Errorf("workspace %s: %v", w.Name, err)
		}
		testenv.Git(t, h.project, "rev-parse", "--verify", "refs/heads/"+w.Branch)
	}
	if got := testenv.Git(t, h.project, "config", "--get", "branch.target.codehydra.note"); got != "original" {
		t.Errorf("target's note = %q after the battery", got)
	}
	if got := testenv.Git(t, h.project, "config", "--get", "branch.other.codehydra.note"); got != "untouched" {
		t.Errorf("other's note = %q after the battery", got)
	}
	if out := testenv.Git(t, h.project, "branch", "--format=%(refname:short)"); out != "main\nother\ntarget" {
		t.Errorf("branches after the battery: %q", out)
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Error("/tmp/pwned exists: an argument reached git as an option")
	}

	// The server still serves a normal client.
	cs := h.session(ws.Path)
	var st map[string]any
	okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
	if st["path"] != ws.Path {
		t.Fatalf("status after the battery: %v", st)
	}
	if res := call(t, cs, ToolSetMetadata, map[string]any{"key": "after", "value": "battery"}); res.IsError {
		t.Fatalf("set metadata after the battery: %s", text(t, res))
	}
	var md map[string]string
	okJSON(t, call(t, cs, ToolGetMetadata, nil), &md)
	if md["after"] != "battery" || md["note"] != "original" {
		t.Fatalf("metadata after the battery: %v", md)
	}

	logs := h.logs.String()
	for _, bad := range []string{"panic", "goroutine "} {
		if strings.Contains(logs, bad) {
			t.Errorf("server log mentions %q:\n%s", bad, logs)
		}
	}
	// The audit log stayed one short JSON line per call, whatever was sent.
	audit, err := os.ReadFile(h.audit)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(audit), []byte("\n"))
	for i, l := range lines {
		var e map[string]any
		if err := json.Unmarshal(l, &e); err != nil || len(l) > 4<<10 {
			t.Errorf("audit line %d (%d bytes) is not a short JSON object: %v", i, len(l), err)
		}
	}
	if bytes.Contains(audit, []byte(h.token.Value())) {
		t.Error("the audit log contains the token")
	}
}
