package prepare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "prepare-test-home-"))
}

// TestTheSetupRunsInItsWorkspacesSandbox: the project's setup command, and
// what it starts, may write the new workspace but not outside it.
func TestTheSetupRunsInItsWorkspacesSandbox(t *testing.T) {
	testenv.RequireSandbox(t)
	main, wt, _ := newWorktree(t)
	outside := filepath.Join(t.TempDir(), "outside")
	h := newHarness(t, settings.ProjectSetup{Setup: `sh -c "echo made > inside.txt; echo x > ` + outside + ` || echo REFUSED"`})
	h.o.Confine = func(_ context.Context, path string) (sandbox.Plan, error) {
		pol := sandbox.Policy{Grants: []sandbox.Grant{{Path: "/", Access: sandbox.Read}, {Path: path, Access: sandbox.Write},
			{Path: "/dev/null", Access: sandbox.Device}}}
		return sandbox.Plan{Policy: &pol, Status: sandbox.Probe()}, nil
	}
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main}, true)
	h.waitPhase(t, wt, PhaseDone)
	if b, err := os.ReadFile(filepath.Join(wt, "inside.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("the setup could not write its workspace: %q, %v", b, err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the setup wrote outside its workspace")
	}
	if !strings.Contains(h.log.String(), "REFUSED") {
		t.Errorf("the setup's output does not show the refusal:\n%s", h.log.String())
	}
}

func TestASetupThatMustBeConfinedAndCannotBeDoesNotRun(t *testing.T) {
	main, wt, _ := newWorktree(t)
	marker := filepath.Join(t.TempDir(), "ran")
	h := newHarness(t, settings.ProjectSetup{Setup: "touch " + marker})
	h.o.Confine = func(context.Context, string) (sandbox.Plan, error) {
		return sandbox.Plan{}, errors.New(`not confined: this kernel has no Landlock, and the settings require the sandbox (sandbox mode "required")`)
	}
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main}, true)
	st := h.waitPhase(t, wt, PhaseFailed)
	if !strings.Contains(st.Detail(), "was not run: not confined") {
		t.Errorf("detail %q, want why the setup did not run", st.Detail())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the setup ran although it could not be confined")
	}
	if h.startedCount() != 0 {
		t.Error("the agent started although its setup did not run")
	}
}
