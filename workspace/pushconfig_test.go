package workspace

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"codehydra/internal/testenv"
)

// TestPushIgnoresTheWorkspacesOwnConfig: the workspace's config.worktree
// (its agent's to write, read by git when the repository has
// extensions.worktreeConfig) steers neither where the push goes
// (remote.*.pushurl) nor through what (http.proxy): the push runs in the
// repository, with the user's config only.
func TestPushIgnoresTheWorkspacesOwnConfig(t *testing.T) {
	t.Parallel()
	m, p, ws, bare := pushFixture(t)
	testenv.Git(t, p.Path, "config", "extensions.worktreeConfig", "true")

	steal := filepath.Join(realDir(t), "steal.git")
	testenv.Git(t, "", "init", "-q", "--bare", steal)
	testenv.Git(t, ws.Path, "config", "--worktree", "remote.origin.pushurl", steal)
	if _, err := m.Push(context.Background(), ws.Path, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	head := testenv.Git(t, ws.Path, "rev-parse", "HEAD")
	if got := testenv.Git(t, bare, "rev-parse", "refs/heads/feat/push"); got != head {
		t.Errorf("origin's feat/push is at %q, want the workspace's head %s", got, head)
	}
	if _, err := testenv.GitErr(steal, "rev-parse", "--verify", "-q", "refs/heads/feat/push"); err == nil {
		t.Error("the push went to the pushurl of the workspace's config.worktree")
	}

	var forge, proxy atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		forge.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	prx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		proxy.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer prx.Close()
	testenv.Git(t, p.Path, "remote", "add", "web", srv.URL+"/repo.git")
	testenv.Git(t, ws.Path, "config", "--worktree", "http.proxy", prx.URL)
	if _, err := m.Push(context.Background(), ws.Path, PushOptions{Remote: "web"}); err == nil {
		t.Fatal("a push to a forge that refuses everything succeeded")
	}
	if proxy.Load() != 0 || forge.Load() == 0 {
		t.Errorf("the push asked the proxy of the workspace's config.worktree %d times and the forge %d times; want 0 and some", proxy.Load(), forge.Load())
	}
}

// TestPushForAnAgentRefusesASiblingsBranchCheckedOutInItsWorkspace: a
// branch CodeHydra created for another workspace, checked out in this
// one, is not this workspace's to push; the user may push it.
func TestPushForAnAgentRefusesASiblingsBranchCheckedOutInItsWorkspace(t *testing.T) {
	t.Parallel()
	m, p, ws, bare := pushFixture(t)
	sib := create(t, m, p, "sib")
	testenv.CommitFile(t, sib.Path, "sib.txt", "the sibling's\n", "the sibling's work")
	testenv.Git(t, ws.Path, "checkout", "-q", "--ignore-other-worktrees", "sib")
	ctx := context.Background()
	_, err := m.Push(ctx, ws.Path, PushOptions{CreatedBranchOnly: true})
	codeOf(t, err, CodeForbidden)
	if _, err := testenv.GitErr(bare, "rev-parse", "--verify", "-q", "refs/heads/sib"); err == nil {
		t.Fatal("an agent pushed its sibling's branch")
	}
	if created, err := m.BranchCreated(ctx, ws.Path); err != nil || created {
		t.Errorf("BranchCreated of a workspace on its sibling's branch = %v, %v; want false", created, err)
	}
	if _, err := m.Push(ctx, ws.Path, PushOptions{}); err != nil {
		t.Errorf("the user's push: %v", err)
	}
}
