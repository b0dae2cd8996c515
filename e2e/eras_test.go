//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// Both protocol eras against the built serve (issue 27, point 2): the
// go-sdk client of each, over HTTP and through mcp-stdio. The default
// client speaks 2026-07-28 (stateless); one that asks for 2025-11-25
// opens a session. Tools, identity, rate limits and audit lines are the
// same in both.

// protocolOf is the protocol version the client of era asks for: nil
// options for the SDK's default, the newest.
func protocolOf(version string) *sdk.ClientSessionOptions {
	if version == "" {
		return nil
	}
	return &sdk.ClientSessionOptions{ProtocolVersion: version}
}

// httpClientOf connects the SDK client of protocol version ("" the
// newest) to the app with token and, when ws is not "", X-Workspace-Path.
func httpClientOf(t *testing.T, app *appRun, version, token, ws string) *sdk.ClientSession {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + token}}
	if ws != "" {
		h.Set(mcp.WorkspaceHeader, ws)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-eras", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: app.info.MCPURL, HTTPClient: &http.Client{Transport: headers(h)}, MaxRetries: -1}, protocolOf(version))
	if err != nil {
		t.Fatalf("connect (protocol %q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// stdioClientOf is stdioClient with the client's protocol version.
func stdioClientOf(t *testing.T, bin string, env []string, version string, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp-stdio"}, args...)...)
	cmd.Env = env
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-eras", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, protocolOf(version))
	if err != nil {
		t.Fatalf("mcp-stdio (protocol %q): %v\n%s", version, err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestBothProtocolErasAgainstTheBuiltServe(t *testing.T) {
	bin, env, app, repo, one := serveOneWorkspaceWith(t, map[string]any{"rateLimit": map[string]any{"perSecond": 0.001, "burst": 8}})
	wsToken, err := mcp.WorkspaceToken(app.info.Token, one)
	if err != nil {
		t.Fatal(err)
	}
	// The app takes a workspace's token once it has loaded its projects;
	// a refused request takes nothing from the rate limit's buckets.
	app.poll(t, "the workspace's token to be taken", func() bool {
		r, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: app.info.MCPURL, Token: wsToken})
		if err == nil {
			r.Close()
		}
		return err == nil
	})
	eras := []struct{ name, version, want string }{
		{"stateless", "", mcp.ProtocolStateless},
		{"sessions", mcp.ProtocolSessions, mcp.ProtocolSessions},
	}
	var refusals []string
	for _, era := range eras {
		// Over HTTP: the workspace's token acts on its own workspace only.
		ws := httpClientOf(t, app, era.version, wsToken, "")
		if got := ws.InitializeResult().ProtocolVersion; got != era.want {
			t.Fatalf("%s over HTTP: protocol %s, want %s", era.name, got, era.want)
		}
		if got, isErr := toolJSON(t, ws, mcp.ToolGetStatus); isErr || !strings.Contains(got, `"path":"`+one+`"`) {
			t.Fatalf("%s: %s with the workspace's token = %s", era.name, mcp.ToolGetStatus, got)
		}
		if got, isErr := toolJSON(t, ws, mcp.ToolProjectAdd); !isErr || !strings.Contains(got, "forbidden") {
			t.Fatalf("%s: project_add with the workspace's token = %s, want forbidden", era.name, got)
		}
		if got, isErr := toolJSON(t, httpClientOf(t, app, era.version, wsToken, repo), mcp.ToolGetStatus); !isErr || !strings.Contains(got, "forbidden") {
			t.Fatalf("%s: the workspace's token naming the main checkout = %s, want forbidden", era.name, got)
		}
		// The user's token, over HTTP and through mcp-stdio.
		user := httpClientOf(t, app, era.version, app.info.Token, "")
		if got, isErr := toolJSON(t, user, mcp.ToolProjectList); isErr || !strings.Contains(got, repo) {
			t.Fatalf("%s: project_list with the master token = %s", era.name, got)
		}
		stdio := stdioClientOf(t, bin, env, era.version)
		if got := stdio.InitializeResult().ProtocolVersion; got != era.want {
			t.Fatalf("%s through mcp-stdio: protocol %s, want %s", era.name, got, era.want)
		}
		if got, isErr := toolJSON(t, stdio, mcp.ToolGetStatus); !isErr || !strings.Contains(got, "invalid-input") {
			t.Fatalf("%s through mcp-stdio: %s without a workspace = %s, want invalid-input", era.name, mcp.ToolGetStatus, got)
		}
		wsStdio := stdioClientOf(t, bin, env, era.version, "--workspace", one)
		if got, isErr := toolJSON(t, wsStdio, mcp.ToolListTasks); isErr {
			t.Fatalf("%s through mcp-stdio --workspace: %s = %s", era.name, mcp.ToolListTasks, got)
		}
	}
	// One bucket per caller and tool, whatever the era: the two eras'
	// clients took 4 of the burst of 8 together; the stateless one takes
	// the rest, and then each is refused alike.
	stateless := httpClientOf(t, app, "", wsToken, "")
	sessions := httpClientOf(t, app, mcp.ProtocolSessions, wsToken, "")
	for i := range 5 {
		got, isErr := toolJSON(t, stateless, mcp.ToolGetStatus)
		if isErr != (i == 4) {
			t.Fatalf("get_status %d of the burst's last 4 = %s", i+1, got)
		}
	}
	for _, cs := range []*sdk.ClientSession{stateless, sessions} {
		got, isErr := toolJSON(t, cs, mcp.ToolGetStatus)
		if !isErr || !strings.Contains(got, "rate-limited") {
			t.Fatalf("a call past the burst = %s, want rate-limited", got)
		}
		refusals = append(refusals, got)
	}
	if refusals[0] != refusals[1] {
		t.Fatalf("the refusals of the rate limit differ by era:\n%s\n%s", refusals[0], refusals[1])
	}

	// A stateless request with a bad token is refused on its own.
	for _, token := range []string{"", "not-a-token", wsToken + "0"} {
		req, err := http.NewRequest(http.MethodPost, app.info.MCPURL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"project_list","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {mcp.ProtocolStateless}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"project_list"}}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a stateless call with the token %q: HTTP %d, want 401", token, resp.StatusCode)
		}
	}

	// The audit lines of the two eras' calls are alike.
	type line struct{ Caller, Workspace, Tool, Outcome string }
	var lines []line
	f, err := os.Open(paths.AuditFile())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Caller == one && l.Tool == mcp.ToolGetStatus {
			lines = append(lines, l)
		}
	}
	okLine := line{one, one, mcp.ToolGetStatus, "ok"}
	forbidden := line{one, repo, mcp.ToolGetStatus, "forbidden"}
	limited := line{one, one, mcp.ToolGetStatus, "rate-limited"}
	want := []line{okLine, forbidden, okLine, forbidden, okLine, okLine, okLine, okLine, limited, limited, limited}
	if !slices.Equal(lines, want) {
		t.Fatalf("the audit lines of the workspace's get_status calls\n got %+v\nwant %+v", lines, want)
	}
	app.stop(t)
}
