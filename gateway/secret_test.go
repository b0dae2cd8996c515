package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

func TestAnEnvSecretInARemoteServersURLShowsInNoErrorStatusOrLog(t *testing.T) {
	const secret = "s3cr3t-Value-42"
	t.Setenv("CODEHYDRA_TEST_URL_SECRET", secret)
	configured := fmt.Sprintf("http://127.0.0.1:%d/mcp?key={env:CODEHYDRA_TEST_URL_SECRET}", freePort(t))
	var log testenv.SyncBuffer
	g := New(Options{Servers: map[string]settings.MCPServer{"remote": {URL: configured}}, StartTimeout: 5 * time.Second,
		Backoff: func(int) time.Duration { return time.Millisecond }, Log: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	g.Tools(ctx)
	_, err := g.Call(ctx, "", "remote__echo", nil)
	if err == nil {
		t.Fatal("a call to a server on a closed port succeeded")
	}
	st := g.Statuses()
	for what, s := range map[string]string{"the call's error": err.Error(), "LastError": st[0].LastError, "the log": log.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the secret: %s", what, s)
		}
	}
	if !strings.Contains(err.Error(), configured) {
		t.Errorf("the call's error %q does not name the configured URL %s", err, configured)
	}
}

// A workspace-scoped remote server's URL is expanded per workspace: the
// secret is hidden in each workspace's form of it too.
func TestAnEnvSecretInAWorkspaceScopedServersURLShowsInNoError(t *testing.T) {
	const secret = "s3cr3t-Value-43"
	t.Setenv("CODEHYDRA_TEST_URL_SECRET", secret)
	configured := fmt.Sprintf("http://127.0.0.1:%d/mcp/{workspace.name}?key={env:CODEHYDRA_TEST_URL_SECRET}", freePort(t))
	var log testenv.SyncBuffer
	g := New(Options{Servers: map[string]settings.MCPServer{"remote": {URL: configured, Scope: settings.ScopeWorkspace}}, StartTimeout: 5 * time.Second,
		Backoff: func(int) time.Duration { return time.Millisecond }, Log: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := g.Call(ctx, t.TempDir(), "remote__echo", nil)
	if err == nil {
		t.Fatal("a call to a server on a closed port succeeded")
	}
	for what, s := range map[string]string{"the call's error": err.Error(), "LastError": g.Statuses()[0].LastError, "the log": log.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the secret: %s", what, s)
		}
	}
	if !strings.Contains(err.Error(), configured) {
		t.Errorf("the call's error %q does not name the configured URL %s", err, configured)
	}
}
