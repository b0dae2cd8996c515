//go:build unix

package gateway

import (
	"slices"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

func TestAKilledServersToolsLeaveTheClientsListAndComeBackWhenItRunsAgain(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := New(Options{Servers: map[string]settings.MCPServer{"every": {Command: every}}, StartTimeout: 20 * time.Second, StopTimeout: time.Second,
		// Long enough for the test to see the tools leave before the restart.
		Backoff: func(int) time.Duration { return 5 * time.Second }})
	t.Cleanup(func() { _ = g.Close() })
	cs, changed := servedClient(t, g)
	testenv.WaitFor(t, "every__echo listed", 30*time.Second, func() bool { return slices.Contains(listed(t, cs), "every__echo") })
	for len(changed) > 0 {
		<-changed
	}

	pids := serverPIDs(t)
	if len(pids) != 1 {
		t.Fatalf("server processes %v, want one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitChanged(t, changed, "the server was killed")
	testenv.WaitFor(t, "every__echo gone", 10*time.Second, func() bool { return !slices.Contains(listed(t, cs), "every__echo") })
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "every__echo", Arguments: map[string]any{"message": "x"}})
	if err == nil && !res.IsError {
		t.Fatal("a tool of the killed server still answered before its restart")
	}

	awaitChanged(t, changed, "the server restarted")
	testenv.WaitFor(t, "every__echo back", 20*time.Second, func() bool { return slices.Contains(listed(t, cs), "every__echo") })
	res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "every__echo", Arguments: map[string]any{"message": "back"}})
	if err != nil || res.IsError {
		t.Fatalf("every__echo after the restart: %v %+v", err, res)
	}
	if st := g.Statuses()[0]; st.Restarts != 1 || st.State != StateRunning {
		t.Fatalf("status %+v, want running after one restart", st)
	}
}
