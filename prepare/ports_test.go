package prepare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/settings"
	"codehydra/workspace"
)

func TestTheSetupGetsTheWorkspacesPortBlock(t *testing.T) {
	main, wt, _ := newWorktree(t)
	if err := workspace.RecordPorts(wt, workspace.PortBlock{First: 20010, Count: 3}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, settings.ProjectSetup{Setup: `sh -c "echo $CODEHYDRA_PORT $CODEHYDRA_PORTS $PORT > ports.txt"`})
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main, Name: "feature"}, true)
	h.waitPhase(t, wt, PhaseDone)
	got, err := os.ReadFile(filepath.Join(wt, "ports.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "20010 20010,20011,20012 20010"; strings.TrimSpace(string(got)) != want {
		t.Fatalf("the setup saw %q, want %q", got, want)
	}
}
