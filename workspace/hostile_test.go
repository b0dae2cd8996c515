package workspace

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHugeProjectPathsAreRefusedAtOnce pins a fix: resolving a path costs
// time in its number of parts (the longest existing ancestor is searched
// part by part), so a 1 MB project path of "/a/a/…" kept a core busy for
// about ten minutes per call, long after the MCP call had timed out.
// Project paths are now bounded like workspace paths.
func TestHugeProjectPathsAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ctx := context.Background()
	deep := strings.Repeat("/a", 500_000)
	calls := map[string]func() error{
		"Create": func() error {
			_, err := m.Create(ctx, CreateOptions{ProjectPath: deep, Name: "ok"})
			return err
		},
		"AddProject":    func() error { _, err := m.AddProject(ctx, deep); return err },
		"RemoveProject": func() error { return m.RemoveProject(ctx, deep) },
		"Workspaces":    func() error { _, err := m.Workspaces(deep); return err },
		"Branches":      func() error { _, err := m.Branches(ctx, deep); return err },
		"DefaultBase":   func() error { _, err := m.DefaultBase(ctx, deep); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		wantCode(t, err, CodeInvalidInput)
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %s", name, d)
		}
	}
	// A path at the limit still reaches the usual checks.
	atLimit := p.Path + "/" + strings.Repeat("x", MaxPathLength-len(p.Path)-1)
	if _, err := m.Workspaces(atLimit); CodeOf(err) != CodeProjectNotFound {
		t.Errorf("Workspaces of a path at the limit: %v, want project-not-found", err)
	}
}
