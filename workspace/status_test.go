package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestStatusReportsDirtiness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		dirty  bool
	}{
		{"clean", func(t *testing.T, dir string) {}, false},
		{"untracked file", func(t *testing.T, dir string) { testenv.WriteFile(t, filepath.Join(dir, "new.txt"), "x") }, true},
		{"untracked file in a new folder", func(t *testing.T, dir string) { testenv.WriteFile(t, filepath.Join(dir, "d", "new.txt"), "x") }, true},
		{"unstaged change", func(t *testing.T, dir string) { testenv.WriteFile(t, filepath.Join(dir, "README.md"), "changed") }, true},
		{"staged change", func(t *testing.T, dir string) {
			testenv.WriteFile(t, filepath.Join(dir, "README.md"), "changed")
			testenv.Git(t, dir, "add", "README.md")
		}, true},
		{"deleted file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "README.md")) }, true},
		{"ignored file", func(t *testing.T, dir string) {
			testenv.CommitFile(t, dir, ".gitignore", "*.log\n", "ignore logs")
			testenv.WriteFile(t, filepath.Join(dir, "x.log"), "noise")
		}, false},
		{"committed change", func(t *testing.T, dir string) { testenv.CommitFile(t, dir, "c.txt", "c", "commit") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, p := setup(t)
			ws := create(t, m, p, "ws")
			tt.change(t, ws.Path)
			st, err := m.Status(context.Background(), ws.Path)
			if err != nil {
				t.Fatal(err)
			}
			if st.IsDirty != tt.dirty {
				t.Fatalf("IsDirty = %v, want %v", st.IsDirty, tt.dirty)
			}
		})
	}
}

func TestStatusDoesNotWriteTheIndex(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	index := filepath.Join(testenv.Git(t, ws.Path, "rev-parse", "--absolute-git-dir"), "index")
	// Same content, new times: a status that may take locks refreshes
	// the index's cached file times and writes it.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(ws.Path, "README.md"), old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(index)
	if _, err := m.Status(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(index); !bytes.Equal(before, after) {
		t.Fatal("Status rewrote the index, so it took index.lock")
	}
	// The check above means something: plain git status does write it.
	testenv.Git(t, ws.Path, "status", "--porcelain")
	if after, _ := os.ReadFile(index); bytes.Equal(before, after) {
		t.Fatal("plain git status did not refresh the index; the test proves nothing")
	}
}

func TestStatusCountsCommitsAheadAndBehindTheBase(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	ctx := context.Background()
	testenv.CommitFile(t, ws.Path, "a1", "1", "ahead 1")
	testenv.CommitFile(t, ws.Path, "a2", "2", "ahead 2")
	testenv.CommitFile(t, p.Path, "b1", "1", "behind 1")

	st, err := m.Status(ctx, ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ahead != 2 || st.Behind != 1 || st.Base != "main" {
		t.Fatalf("status = %+v, want 2 ahead, 1 behind main", st)
	}

	// An unknown base is no error: 0 and 0.
	gone := "gone-branch"
	if err := m.SetMetadata(ctx, ws.Path, "base", &gone); err != nil {
		t.Fatal(err)
	}
	st, err = m.Status(ctx, ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ahead != 0 || st.Behind != 0 || st.Base != gone {
		t.Fatalf("status with unknown base = %+v", st)
	}
}

func TestStatusOfAWorktreeWithoutBaseMetadataUsesTheDefaultBase(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	wt := filepath.Join(realDir(t), "outside")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "outside", wt)
	testenv.CommitFile(t, wt, "x", "x", "ahead")
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	st, err := m.Status(context.Background(), wt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Base != "main" || st.Ahead != 1 {
		t.Fatalf("status = %+v", st)
	}
}

func TestStatusReportsTheAgent(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	st, err := m.Status(context.Background(), ws.Path)
	if err != nil || !st.Agent.Equal(NoAgent) {
		t.Fatalf("without agents: %+v, %v", st.Agent, err)
	}
	busy := AgentStatus{Type: AgentBusy, Counts: AgentCounts{Busy: 1, Total: 1}, State: AgentStateReady, Port: 4100}
	agents := &fakeAgents{}
	m, p = setupWith(t, agents)
	ws = create(t, m, p, "ws")
	agents.set(ws.Path, busy)
	st, err = m.Status(context.Background(), ws.Path)
	if err != nil || !st.Agent.Equal(busy) {
		t.Fatalf("with agents: %+v, %v", st.Agent, err)
	}
}

func TestStatusOfAnUnknownPathIsNotFound(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	_, err := m.Status(context.Background(), p.Path)
	wantCode(t, err, CodeWorkspaceNotFound)
	_, err = m.Status(context.Background(), "relative")
	wantCode(t, err, CodeInvalidInput)
}

func BenchmarkStatus(b *testing.B) {
	m, p := setup(b)
	ws := create(b, m, p, "bench")
	for i := range 50 {
		testenv.WriteFile(b, filepath.Join(ws.Path, "files", string(rune('a'+i%26))+string(rune('a'+i/26))), "x")
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Status(ctx, ws.Path); err != nil {
			b.Fatal(err)
		}
	}
}
