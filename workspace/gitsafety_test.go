package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// Point 3 of issue 20: a workspace's files and its worktree's own config
// are its agent's to write, and CodeHydra's git (which runs outside any
// sandbox) must not run code that they name.

// tattletale writes a script that creates marker when run, and returns
// the script's path.
func tattletale(t *testing.T, marker string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "tattle.sh")
	testenv.WriteFile(t, script, "#!/bin/sh\ntouch '"+marker+"'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// plainGit runs the machine's git in dir as a user would, with no
// protection, to show that the planted code runs there.
func plainGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	_ = cmd.Run()
}

func TestAFsmonitorThatTheAgentWroteDoesNotRunWhenCodeHydraComputesTheStatus(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	// The user's repository takes worktree configs; the agent's own is
	// in its worktree's folder, which its sandbox lets it write.
	testenv.Git(t, p.Path, "config", "extensions.worktreeConfig", "true")
	ws := create(t, m, p, "fsmon")
	marker := filepath.Join(t.TempDir(), "ran")
	testenv.Git(t, ws.Path, "config", "--worktree", "core.fsmonitor", tattletale(t, marker))
	testenv.WriteFile(t, filepath.Join(ws.Path, "changed.txt"), "x")

	st, err := m.Status(context.Background(), ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsDirty {
		t.Error("the status does not show the change")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CodeHydra's git status ran the fsmonitor the agent configured")
	}
	plainGit(t, ws.Path, "status")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a plain git status does not run the planted fsmonitor either, so this test shows nothing")
	}
}

func TestCodeHydrasGitRunsNoHookOfTheRepository(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	marker := filepath.Join(t.TempDir(), "ran")
	// A relative hooksPath (as husky sets it) names hooks inside each
	// worktree: in a workspace, files its agent writes and commits.
	testenv.Git(t, p.Path, "config", "core.hooksPath", ".githooks")
	hooks := filepath.Join(p.Path, ".githooks")
	for _, h := range []string{"post-checkout", "post-index-change", "reference-transaction"} {
		testenv.WriteFile(t, filepath.Join(hooks, h), "#!/bin/sh\ntouch '"+marker+"'\n")
		if err := os.Chmod(filepath.Join(hooks, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Git(t, p.Path, "add", ".githooks")
	testenv.Git(t, p.Path, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "hooks")
	os.Remove(marker)

	ws := create(t, m, p, "hooked")
	testenv.WriteFile(t, filepath.Join(ws.Path, "changed.txt"), "x")
	if _, err := m.Status(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CodeHydra's git ran a hook of the repository (create, status or delete)")
	}
	plainGit(t, p.Path, "checkout", "-q", "-b", "control")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a plain checkout does not run the hooks either, so this test shows nothing")
	}
}

func TestAWorkspaceWhoseGitFileLeadsElsewhereGetsNoGitFromCodeHydra(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "steered")
	marker := filepath.Join(t.TempDir(), "ran")
	// The agent makes a git folder of its own, with a config that names
	// a program, and points its workspace's .git at it.
	fake := filepath.Join(ws.Path, "fakegit")
	testenv.Git(t, ws.Path, "init", "-q", "--bare", fake)
	testenv.Git(t, fake, "config", "core.fsmonitor", tattletale(t, marker))
	testenv.Git(t, fake, "config", "core.bare", "false")
	testenv.WriteFile(t, filepath.Join(ws.Path, ".git"), "gitdir: "+fake+"\n")

	_, err := m.Status(context.Background(), ws.Path)
	if err == nil || !strings.Contains(err.Error(), "does not lead to a worktree folder") {
		t.Errorf("Status = %v, want a refusal", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CodeHydra's git ran the fsmonitor of a git folder the agent made")
	}
	plainGit(t, ws.Path, "status")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a plain git status does not run the planted fsmonitor either, so this test shows nothing")
	}
}
