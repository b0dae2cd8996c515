//go:build unix

package opencode

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestWithServerAuthReplacesInheritedCredentials(t *testing.T) {
	base := []string{"PATH=/usr/bin", "OPENCODE_SERVER_PASSWORD=inherited", "OPENCODE_SERVER_USERNAME=someone", "XOPENCODE_SERVER_PASSWORD=keep"}
	got := withServerAuth(base, "pw")
	want := []string{"PATH=/usr/bin", "XOPENCODE_SERVER_PASSWORD=keep", "OPENCODE_SERVER_USERNAME=opencode", "OPENCODE_SERVER_PASSWORD=pw"}
	if !slices.Equal(got, want) {
		t.Errorf("withServerAuth =\n%q\nwant\n%q", got, want)
	}
}

// status of GET path on the server at port, with basic auth when password
// is not "". Only the status line is read, so that it works on streams.
func authStatus(t *testing.T, port int, path, password string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if password != "" {
		req.SetBasicAuth("opencode", password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestEachAgentServerDemandsItsOwnPassword pins docs/DESIGN.md's
// OPENCODE_SERVER_PASSWORD: each start of each agent gets a random one
// (not an inherited one, not the MCP token), the supervisor reaches the
// server only with it (readiness, MCP, the event stream), and it appears
// in no log line and no agent record.
func TestEachAgentServerDemandsItsOwnPassword(t *testing.T) {
	f := newFixture(t, "OPENCODE_SERVER_PASSWORD=inherited", "OPENCODE_SERVER_USERNAME=someone")
	dump := filepath.Join(f.dir, "env.json")
	f.env = append(f.env, "FAKEOC_ENV_FILE="+dump)
	logs := &testenv.SyncBuffer{}
	o := f.options()
	o.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, tWriter{f.t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := f.start(o)
	a, b := f.workspace("a"), f.workspace("b")
	s.Start(a)
	waitState(t, s, a.Path, workspace.AgentStateReady, 10*time.Second)

	env := readEnvDump(t, dump).Env
	passwords := envValues(env, "OPENCODE_SERVER_PASSWORD")
	if got := envValues(env, "OPENCODE_SERVER_USERNAME"); !slices.Equal(got, []string{"opencode"}) {
		t.Errorf("OPENCODE_SERVER_USERNAME = %q, want exactly [opencode]", got)
	}
	if len(passwords) != 1 {
		t.Fatalf("OPENCODE_SERVER_PASSWORD = %q, want exactly one", passwords)
	}
	first := passwords[0]
	if raw, err := hex.DecodeString(first); err != nil || len(raw) != 32 {
		t.Errorf("password %q is not 32 random bytes in hex", first)
	}
	port, password, ok := s.OpencodeServer(a.Path)
	if !ok || password != first {
		t.Fatalf("OpencodeServer = %d, %q, %v; want the agent's password", port, password, ok)
	}
	for _, path := range []string{"/global/health", "/mcp", "/session/status", "/permission", "/event"} {
		if got := authStatus(t, port, path, ""); got != http.StatusUnauthorized {
			t.Errorf("GET %s without the password = %d, want 401", path, got)
		}
		if got := authStatus(t, port, path, "inherited"); got != http.StatusUnauthorized {
			t.Errorf("GET %s with the inherited password = %d, want 401", path, got)
		}
		if got := authStatus(t, port, path, password); got != http.StatusOK {
			t.Errorf("GET %s with the password = %d, want 200", path, got)
		}
	}
	// The event stream is open with the password: its events arrive.
	testenv.WaitFor(t, "event stream", 5*time.Second, func() bool { return eventClients(t, port) > 0 })
	emit(t, port, false, EventSessionStatus, status("ses_1", "busy"))
	testenv.WaitFor(t, "busy", 5*time.Second, func() bool { return s.AgentStatus(a.Path).Type == workspace.AgentBusy })

	s.Start(b)
	waitState(t, s, b.Path, workspace.AgentStateReady, 10*time.Second)
	_, other, _ := s.OpencodeServer(b.Path)
	if err := s.Restart(a.Path); err != nil {
		t.Fatal(err)
	}
	var again string
	testenv.WaitFor(t, "a restarted", 10*time.Second, func() bool {
		_, again, ok = s.OpencodeServer(a.Path)
		return ok && again != first
	})
	secrets := []string{first, other, again}
	if other == first || slices.Contains(secrets, "tok-1") || other == "" || again == "" {
		t.Errorf("passwords of a, b, a restarted = %q; want each its own, none the MCP token", secrets)
	}

	var records strings.Builder
	entries, _ := os.ReadDir(f.agentsDir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(f.agentsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		records.Write(data)
	}
	if records.Len() == 0 {
		t.Fatal("no agent records to check")
	}
	for _, secret := range secrets {
		if strings.Contains(records.String(), secret) {
			t.Errorf("an agent record holds a password:\n%s", records.String())
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds a password:\n%s", logs.String())
		}
	}
}
