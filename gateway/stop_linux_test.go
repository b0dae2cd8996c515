package gateway

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

func TestForgetWorkspaceStopsItsInstanceAndALaterCallStartsAFreshOne(t *testing.T) {
	fs := testenv.RealMCPServer(t, "mcp-server-filesystem")
	other, ws := t.TempDir(), t.TempDir()
	testenv.WriteFile(t, filepath.Join(ws, "a.txt"), "one")
	g := newGateway(t, map[string]settings.MCPServer{"fs": {Command: fs, Scope: settings.ScopeWorkspace}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	read := func(ws string) {
		t.Helper()
		res, err := g.Call(ctx, ws, "fs__read_text_file", args(t, map[string]string{"path": filepath.Join(ws, "a.txt")}))
		if err != nil || res.IsError {
			t.Fatalf("Call from %s: %+v, %v", ws, res, err)
		}
	}
	testenv.WriteFile(t, filepath.Join(other, "a.txt"), "two")
	read(other)
	kept := serverPIDs(t)
	read(ws)
	var first []int
	for _, pid := range serverPIDs(t) {
		if !slices.Contains(kept, pid) {
			first = append(first, pid)
		}
	}
	if len(kept) != 1 || len(first) != 1 {
		t.Fatalf("server processes %v then %v, want one per workspace", kept, first)
	}
	g.ForgetWorkspace(ws)
	if !gone(first[0]) {
		t.Fatalf("the deleted workspace's server %d still runs after ForgetWorkspace", first[0])
	}
	if now := serverPIDs(t); !slices.Equal(now, kept) {
		t.Fatalf("server processes after ForgetWorkspace %v, want only the other workspace's %v", now, kept)
	}
	if st := g.Statuses(); st[0].Instances != 1 {
		t.Fatalf("Statuses = %+v, want 1 instance", st)
	}
	read(ws) // a new workspace at the same path
	now := serverPIDs(t)
	if len(now) != 2 || slices.Contains(now, first[0]) {
		t.Fatalf("server processes %v, want the other's and a fresh one", now)
	}
}

func TestCloseWhileAServerIsStartingReturnsOnlyOnceItsProcessIsGone(t *testing.T) {
	g := newGateway(t, map[string]settings.MCPServer{"slow": {Command: "sh", Args: []string{"-c", "sleep 30; cat"}}})
	go g.Tools(t.Context())
	var pids []int
	testenv.WaitFor(t, "the server to be started", 10*time.Second, func() bool {
		pids = serverPIDs(t)
		return len(pids) == 1
	})
	start := time.Now()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pids[0]) {
		t.Fatalf("server %d still runs after Close (which took %s)", pids[0], time.Since(start))
	}
}

func TestCloseWhileAWorkspaceServersProbeIsStartingReturnsOnlyOnceItsProcessIsGone(t *testing.T) {
	g := newGateway(t, map[string]settings.MCPServer{"slow": {Command: "sh", Args: []string{"-c", "sleep 30; cat"},
		Scope: settings.ScopeWorkspace}})
	go g.Tools(t.Context())
	var pids []int
	testenv.WaitFor(t, "the probe to be started", 10*time.Second, func() bool {
		pids = serverPIDs(t)
		return len(pids) == 1
	})
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pids[0]) {
		t.Fatalf("probe %d still runs after Close", pids[0])
	}
}
