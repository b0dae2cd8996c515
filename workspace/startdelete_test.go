package workspace

import (
	"context"
	"errors"
	"testing"
)

// busyKeys returns what the manager holds reserved (for tests).
func (m *Manager) busyKeys() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.busy))
	for k, v := range m.busy {
		out[k] = v
	}
	return out
}

func TestStartDeleteReservesTheWorkspaceBeforeItsWorkRuns(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	ctx := context.Background()
	run, err := m.StartDelete(ctx, ws.Path, DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing has run yet, and still a second delete is refused.
	if !exists(ws.Path) {
		t.Fatal("StartDelete deleted before its work ran")
	}
	_, err = m.StartDelete(ctx, ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	wantCode(t, m.Delete(ctx, ws.Path, DeleteOptions{}), CodeConflict)
	// The refused ones took nothing away from the first's reservation.
	_, err = m.StartDelete(ctx, ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)

	if err := run(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(ws.Path) || branchExists(t, p.Path, "ws") {
		t.Fatal("the work of StartDelete left the workspace behind")
	}
	if busy := m.busyKeys(); len(busy) != 0 {
		t.Fatalf("reserved after run returned: %v", busy)
	}
	// The path is free again: a workspace of the same name can be made.
	if again := create(t, m, p, "ws"); again.Path != ws.Path {
		t.Fatalf("re-created at %s, want %s", again.Path, ws.Path)
	}
}

func TestStartDeleteHoldsTheReservationWhileItsWorkRuns(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{entered: make(chan string, 1), gate: make(chan struct{})}
	m, p := setupWith(t, agents)
	ws := create(t, m, p, "ws")
	ctx := context.Background()
	run, err := m.StartDelete(ctx, ws.Path, DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	<-agents.entered // the work is inside its first step
	_, err = m.StartDelete(ctx, ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	wantCode(t, m.Delete(ctx, ws.Path, DeleteOptions{}), CodeConflict)
	close(agents.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if busy := m.busyKeys(); len(busy) != 0 {
		t.Fatalf("reserved after run returned: %v", busy)
	}
}

func TestStartDeleteReleasesTheReservationWhenItsWorkFails(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{stopErr: errors.New("still running")}
	m, p := setupWith(t, agents)
	ws := create(t, m, p, "ws")
	ctx := context.Background()
	run, err := m.StartDelete(ctx, ws.Path, DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(ctx); err == nil {
		t.Fatal("the delete succeeded although the agent could not be stopped")
	}
	if busy := m.busyKeys(); len(busy) != 0 {
		t.Fatalf("reserved after a failed run: %v", busy)
	}
	agents.mu.Lock()
	agents.stopErr = nil
	agents.mu.Unlock()
	if err := m.Delete(ctx, ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("a delete after the failed one: %v", err)
	}
}

func TestStartDeleteErrorsReserveNothing(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		path string
		code Code
	}{
		{"main checkout", p.Path, CodeInvalidInput},
		{"no workspace", realDir(t), CodeWorkspaceNotFound},
		{"relative", "ws", CodeInvalidInput},
	} {
		run, err := m.StartDelete(ctx, tt.path, DeleteOptions{})
		if run != nil {
			t.Errorf("%s: StartDelete returned work along with %v", tt.name, err)
		}
		wantCode(t, err, tt.code)
		if busy := m.busyKeys(); len(busy) != 0 {
			t.Fatalf("%s: reserved after StartDelete failed: %v", tt.name, busy)
		}
	}
	// A create holding the workspace's path makes StartDelete a conflict
	// that leaves the create's reservation alone.
	release, err := m.reserve("create", pathKey(ws.Path))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.StartDelete(ctx, ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	if busy := m.busyKeys(); len(busy) != 1 || busy[pathKey(ws.Path)] != "create" {
		t.Fatalf("reserved after a conflicting StartDelete: %v, want the create's only", busy)
	}
	release()
	if err := m.Delete(ctx, ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
