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

func TestAWorkspaceWhoseGitFileNamesAnotherWorktreesFolderGetsNeitherGitNorItsFolders(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a := create(t, m, p, "a")
	b := create(t, m, p, "b")
	bGitDir, _, err := m.GitDirs(b)
	if err != nil {
		t.Fatal(err)
	}
	// a's agent points its .git at b's folder in the repository, hoping
	// for write access to it when its sandbox is made again.
	testenv.WriteFile(t, filepath.Join(a.Path, ".git"), "gitdir: "+bGitDir+"\n")
	if dir, _, err := m.GitDirs(a); err == nil || !strings.Contains(err.Error(), "which git keeps for another worktree") {
		t.Errorf("GitDirs(a) = %s, %v; want a refusal", dir, err)
	}
	if _, err := m.Status(context.Background(), a.Path); err == nil {
		t.Error("CodeHydra computed a's status through b's git folder")
	}
	if _, err := m.Status(context.Background(), b.Path); err != nil {
		t.Errorf("b's own status: %v", err)
	}
}

func TestAFilterInTheWorktreesOwnConfigKeepsCodeHydrasGitAway(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.Git(t, p.Path, "config", "extensions.worktreeConfig", "true")
	ws := create(t, m, p, "filtered")
	marker := filepath.Join(t.TempDir(), "ran")
	testenv.Git(t, ws.Path, "config", "--worktree", "filter.evil.clean", tattletale(t, marker)+" #")
	testenv.WriteFile(t, filepath.Join(ws.Path, ".gitattributes"), "* filter=evil\n")
	// A file of the repository, changed but not in size: git must hash it,
	// through the filter, to tell.
	testenv.WriteFile(t, filepath.Join(ws.Path, "README.md"), "jello\n")

	_, err := m.Status(context.Background(), ws.Path)
	if err == nil || !strings.Contains(err.Error(), "filter.clean") && !strings.Contains(err.Error(), "sets filter") {
		t.Errorf("Status = %v, want a refusal that names the filter", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CodeHydra's git ran a filter of the worktree's own config")
	}
	plainGit(t, ws.Path, "add", "-A")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: plain git does not run the planted filter either, so this test shows nothing")
	}
}

func TestAWorkspaceWithoutItsGitFileGetsNoGitFromCodeHydra(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "nodotgit")
	marker := filepath.Join(t.TempDir(), "ran")
	// The agent takes .git away and makes its workspace a git folder of
	// its own (git finds one in the folder itself), with a filter and a
	// file that git must hash through it.
	if err := os.Remove(filepath.Join(ws.Path, ".git")); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, ws.Path, "init", "-q", "--bare", ws.Path)
	testenv.Git(t, ws.Path, "config", "core.bare", "false")
	testenv.Git(t, ws.Path, "config", "core.worktree", ws.Path)
	testenv.Git(t, ws.Path, "add", "README.md")
	testenv.Git(t, ws.Path, "config", "filter.evil.clean", tattletale(t, marker)+" #")
	testenv.WriteFile(t, filepath.Join(ws.Path, ".gitattributes"), "* filter=evil\n")
	testenv.WriteFile(t, filepath.Join(ws.Path, "README.md"), "jello\n")

	if _, err := m.Status(context.Background(), ws.Path); err == nil {
		t.Error("CodeHydra computed the status of a workspace without its .git")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CodeHydra's git ran a filter of a git folder the agent made")
	}
	plainGit(t, ws.Path, "status")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a plain git status does not run the planted filter either, so this test shows nothing")
	}
}

func TestAFilterOfASubmodulesGitFolderDoesNotRunInCodeHydrasStatus(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	sub := testenv.GitRepo(t, "sub")
	testenv.Git(t, p.Path, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub")
	testenv.Git(t, p.Path, "commit", "-qm", "submodule")
	ws := create(t, m, p, "withsub")
	testenv.Git(t, ws.Path, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
	marker := filepath.Join(t.TempDir(), "ran")
	// The submodule's .git file is in the workspace: the agent points it
	// at a git folder of its own with a filter.
	fake := filepath.Join(ws.Path, "fakesub.git")
	testenv.Git(t, ws.Path, "clone", "-q", "--bare", sub, fake)
	testenv.Git(t, fake, "config", "core.bare", "false")
	testenv.Git(t, fake, "config", "filter.evil.clean", tattletale(t, marker)+" #")
	testenv.WriteFile(t, filepath.Join(ws.Path, "sub", ".git"), "gitdir: "+fake+"\n")
	testenv.Git(t, filepath.Join(ws.Path, "sub"), "read-tree", "HEAD")
	testenv.WriteFile(t, filepath.Join(ws.Path, "sub", ".gitattributes"), "* filter=evil\n")
	subFile := filepath.Join(ws.Path, "sub", "README.md")
	b, err := os.ReadFile(subFile)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, subFile, strings.Repeat("y", len(b)))

	if _, err := m.Status(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CodeHydra's git status ran a filter of a submodule's git folder")
	}
	plainGit(t, ws.Path, "status")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a plain git status does not run the planted filter either, so this test shows nothing")
	}
}

func TestAWorktreeWhoseRecordAnAgentRewroteMakesNoWorkspaceOfAnotherFolder(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "moved")
	gitDir, _, err := m.GitDirs(ws)
	if err != nil {
		t.Fatal(err)
	}
	// The agent may write its worktree's folder in the repository, and
	// git takes the worktree's path from its gitdir file: it points it at
	// a folder of the user's, hoping for a sandbox that writes it.
	victim := t.TempDir()
	testenv.WriteFile(t, filepath.Join(gitDir, "gitdir"), filepath.Join(victim, ".git")+"\n")
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	for _, w := range m.AllWorkspaces() {
		if w.Path == victim {
			t.Fatalf("the folder %s, which git's record now names, is a workspace", victim)
		}
	}
	if _, err := m.Resolve(victim); err == nil {
		t.Fatal("the victim folder resolves as a workspace")
	}
}
