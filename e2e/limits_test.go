package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// TestServeLimitsMCPSessionsAsTheSettingsSay runs the built binary with
// mcpMaxSessions 1 and mcpSessionIdleSeconds 2: a second session is
// refused while the first is open, and once the first has been idle for
// 2 s it is closed, which frees its place.
func TestServeLimitsMCPSessionsAsTheSettingsSay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := builtApp(t)
	isolate(t)
	testenv.WriteSettings(t, `{"mcpSessionIdleSeconds": 2, "mcpMaxSessions": 1}`)
	app := launch(t, bin, os.Environ())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dial := func() (*mcp.Remote, error) {
		return mcp.Dial(ctx, mcp.DialOptions{URL: app.info.MCPURL, Token: app.info.Token, Protocol: mcp.ProtocolSessions})
	}

	first, err := dial()
	if err != nil {
		t.Fatalf("the first session: %v", err)
	}
	defer first.Close()
	if _, err := first.Call(ctx, mcp.ToolProjectList, nil); err != nil {
		t.Fatalf("a call on the first session: %v", err)
	}
	if second, err := dial(); err == nil {
		second.Close()
		t.Fatal("a second session was opened past mcpMaxSessions 1")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("the second session was refused with %v, want 503 saying there are too many sessions", err)
	}

	// A call would keep the first session alive; a new session, which
	// the cap of 1 admits only once the idle one is closed, does not.
	var again *mcp.Remote
	if !testenv.Poll(20*time.Second, 100*time.Millisecond, func() bool {
		again, err = dial()
		return err == nil
	}) {
		t.Fatalf("no new session 20 s after the idle one should have been closed: %v", err)
	}
	defer again.Close()
	if _, err := first.Call(ctx, mcp.ToolProjectList, nil); err == nil {
		t.Fatal("a call on a session idle for longer than mcpSessionIdleSeconds succeeded")
	}
	if _, err := again.Call(ctx, mcp.ToolProjectList, nil); err != nil {
		t.Fatalf("a call on the new session: %v", err)
	}
	app.stop(t)
}
