package mcp

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// A workspace token is bound to the workspace's registration with git,
// not only to its path: real git, real server, real HTTP.

// tokenOf is the token of the workspace at path under the harness's
// current master token, as the app gives it to that workspace's agent.
func (h *harness) tokenOf(path string) string {
	h.t.Helper()
	tok, err := h.token.ForWorkspace(path)
	if err != nil {
		h.t.Fatalf("token of %s: %v", path, err)
	}
	return tok
}

func TestAWorkspaceMadeAgainAtTheSamePathRefusesTheOldToken(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	old := h.tokenOf(a.Path)
	if code := h.initializeStatus(old, a.Path); code != http.StatusOK {
		t.Fatalf("A's token while A exists: HTTP %d", code)
	}
	if err := h.mgr.Delete(context.Background(), a.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := h.create("a")
	if again.Path != a.Path {
		t.Fatalf("the new workspace is at %s, not at %s", again.Path, a.Path)
	}
	fresh := h.tokenOf(again.Path)
	if fresh == old {
		t.Fatal("the workspace made again at the same path got the old token")
	}
	for _, header := range []string{a.Path, "", h.project} {
		if code := h.initializeStatus(old, header); code != http.StatusUnauthorized {
			t.Errorf("the deleted workspace's token, header %q: HTTP %d, want 401", header, code)
		}
	}
	for _, header := range []string{again.Path, ""} {
		if code := h.initializeStatus(fresh, header); code != http.StatusOK {
			t.Errorf("the new workspace's token, header %q: HTTP %d, want 200", header, code)
		}
	}
	okJSON(t, call(t, h.sessionAs(fresh, again.Path), ToolGetStatus, nil), new(statusOutput))
}

func TestAWorktreeMadeOutsideTheAppGetsANonceAndAWorkingToken(t *testing.T) {
	h := newHarness(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "outside")
	testenv.Git(t, h.project, "worktree", "add", "-b", "outside", path)
	if err := h.mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(h.project, ".git", "worktrees", "outside")
	nonceFile := filepath.Join(admin, workspace.TokenNonceFile)
	if _, err := os.Stat(nonceFile); err == nil {
		t.Fatal("git made a nonce file")
	}
	tok := h.tokenOf(path)
	fi, err := os.Stat(nonceFile)
	if err != nil {
		t.Fatalf("no nonce after the first token: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("nonce file mode %v, want 0600", fi.Mode().Perm())
	}
	if again := h.tokenOf(path); again != tok {
		t.Fatal("the token changed between two derivations")
	}
	okJSON(t, call(t, h.sessionAs(tok, path), ToolGetStatus, nil), new(statusOutput))
	// The nonce goes with git's record of the worktree.
	testenv.Git(t, h.project, "worktree", "remove", path)
	if _, err := os.Stat(admin); !os.IsNotExist(err) {
		t.Fatalf("git's admin folder is still there: %v", err)
	}
}

func TestTheMainCheckoutHasNoWorkspaceToken(t *testing.T) {
	isolateGit(t)
	repo := testenv.GitRepo(t, "main")
	if tok, err := WorkspaceToken(validMaster, repo); err == nil {
		t.Fatalf("the main checkout got a workspace token %q", tok)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", workspace.TokenNonceFile)); !os.IsNotExist(err) {
		t.Fatalf("a nonce file was written into the main checkout's .git: %v", err)
	}
}

func TestAHandEditedGitFileDoesNotBorrowAnotherWorktreesNonce(t *testing.T) {
	h := newHarness(t)
	a, b := h.create("a"), h.create("b")
	if _, err := WorkspaceToken(validMaster, a.Path); err != nil {
		t.Fatal(err)
	}
	dotGitA, err := os.ReadFile(filepath.Join(a.Path, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Path, ".git"), dotGitA, 0o644); err != nil {
		t.Fatal(err)
	}
	if tok, err := WorkspaceToken(validMaster, b.Path); err == nil {
		t.Fatalf("a .git file naming A's registration gave B the token %q", tok)
	}
}

// validMaster is a well-formed master token.
const validMaster = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
