package workspace

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// pushFixture is a project with a bare repository as its origin and a
// workspace with a commit of its own.
func pushFixture(t *testing.T) (m *Manager, p Project, ws Workspace, bare string) {
	t.Helper()
	m, p = setup(t)
	bare = testenv.BareRemote(t, p.Path, "origin")
	ws = create(t, m, p, "feat/push")
	testenv.CommitFile(t, ws.Path, "work.txt", "the agent's work\n", "the agent's commit")
	return m, p, ws, bare
}

func codeOf(t *testing.T, err error, want Code) {
	t.Helper()
	if err == nil || CodeOf(err) != want {
		t.Fatalf("err = %v (code %s), want code %s", err, CodeOf(err), want)
	}
}

func TestPushPushesTheBranchAndMakesItTheUpstream(t *testing.T) {
	t.Parallel()
	m, p, ws, bare := pushFixture(t)
	// A pre-push hook of the repository's must not run: CodeHydra's git
	// runs none.
	marker := filepath.Join(t.TempDir(), "hook-ran")
	testenv.WriteFile(t, filepath.Join(p.Path, ".git", "hooks", "pre-push"), "#!/bin/sh\ntouch "+marker+"\nexit 1\n")
	if err := os.Chmod(filepath.Join(p.Path, ".git", "hooks", "pre-push"), 0o755); err != nil {
		t.Fatal(err)
	}

	pr, err := m.Push(context.Background(), ws.Path, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (PullRequest{Remote: "origin", Branch: "feat/push", Base: "main", Pushed: true}); pr != want {
		t.Fatalf("Push = %+v, want %+v", pr, want)
	}
	head := testenv.Git(t, ws.Path, "rev-parse", "HEAD")
	if got := testenv.Git(t, bare, "rev-parse", "refs/heads/feat/push"); got != head {
		t.Errorf("the remote's feat/push is at %s, want the workspace's head %s", got, head)
	}
	if got := testenv.Git(t, ws.Path, "rev-parse", "--abbrev-ref", "@{upstream}"); got != "origin/feat/push" {
		t.Errorf("upstream %q, want origin/feat/push", got)
	}
	if exists(marker) {
		t.Error("the repository's pre-push hook ran")
	}

	// Pushing again, with more work, fast-forwards the remote's branch.
	head = testenv.CommitFile(t, ws.Path, "more.txt", "more\n", "more work")
	if _, err := m.Push(context.Background(), ws.Path, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if got := testenv.Git(t, bare, "rev-parse", "refs/heads/feat/push"); got != head {
		t.Errorf("after the second push the remote's branch is at %s, want %s", got, head)
	}
}

func TestPushNamesTheBaseAsABranchOfTheRemote(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.BareRemote(t, p.Path, "upstream")
	ws, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "fix", Base: "upstream/main"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := m.Push(context.Background(), ws.Path, PushOptions{Remote: "upstream"})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Base != "main" || pr.Remote != "upstream" {
		t.Fatalf("Push = %+v, want base main on upstream", pr)
	}
}

func TestPushWithoutTheRemoteSaysWhichRemotesThereAre(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "lonely")
	_, err := m.Push(context.Background(), ws.Path, PushOptions{})
	codeOf(t, err, CodeInvalidInput)
	if !errors.Is(err, ErrNoRemote) || !strings.Contains(err.Error(), "has no git remote") {
		t.Fatalf("err = %v, want ErrNoRemote saying the project has none", err)
	}

	testenv.BareRemote(t, p.Path, "fork")
	testenv.BareRemote(t, p.Path, "upstream")
	_, err = m.Push(context.Background(), ws.Path, PushOptions{})
	codeOf(t, err, CodeInvalidInput)
	if errors.Is(err, ErrNoRemote) || !strings.Contains(err.Error(), `no remote "origin", only fork, upstream`) {
		t.Fatalf("err = %v, want one naming the remotes there are", err)
	}
}

func TestARejectedPushSaysWhyAndChangesNothing(t *testing.T) {
	t.Parallel()
	m, p, ws, bare := pushFixture(t)
	// Someone else pushed to the branch first.
	other := filepath.Join(t.TempDir(), "other")
	testenv.Git(t, "", "clone", "-q", bare, other)
	testenv.Git(t, other, "checkout", "-q", "-b", "feat/push")
	theirs := testenv.CommitFile(t, other, "theirs.txt", "theirs\n", "their commit")
	testenv.Git(t, other, "push", "-q", "origin", "feat/push")

	_, err := m.Push(context.Background(), ws.Path, PushOptions{})
	codeOf(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "rejected") || !strings.Contains(err.Error(), "fetch first") {
		t.Fatalf("err = %v, want git's reason for the rejection", err)
	}
	if got := testenv.Git(t, bare, "rev-parse", "refs/heads/feat/push"); got != theirs {
		t.Errorf("the remote's branch moved to %s, want it left at %s", got, theirs)
	}
	if _, err := testenv.GitErr(p.Path, "config", "--get", "branch.feat/push.remote"); err == nil {
		t.Error("a rejected push recorded an upstream")
	}

	// A remote's hook that declines says why, in its own words.
	hook := filepath.Join(bare, "hooks", "pre-receive")
	testenv.WriteFile(t, hook, "#!/bin/sh\necho 'branch feat/* is frozen until Monday' >&2\nexit 1\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	ws2 := create(t, m, p, "feat/other")
	testenv.CommitFile(t, ws2.Path, "x.txt", "x\n", "x")
	_, err = m.Push(context.Background(), ws2.Path, PushOptions{})
	codeOf(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "frozen until Monday") {
		t.Fatalf("err = %v, want the remote's words", err)
	}
}

func TestAFailedPushKeepsTheRemotesCredentialsOutOfItsError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	m, p := setup(t)
	url := strings.Replace(srv.URL, "http://", "http://hydra:s3cr3t-t0ken@", 1) + "/repo.git"
	testenv.Git(t, p.Path, "remote", "add", "origin", url)
	ws := create(t, m, p, "leaky")

	_, err := m.Push(context.Background(), ws.Path, PushOptions{})
	codeOf(t, err, CodeInternal)
	if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "could not push leaky to origin") {
		t.Fatalf("err = %q, want git's reason without the password", err)
	}
}

func TestPushForAnAgentRefusesABranchCodeHydraDidNotCreate(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	bare := testenv.BareRemote(t, p.Path, "origin")
	testenv.Git(t, p.Path, "branch", "users-own")
	users := create(t, m, p, "users-own")
	_, err := m.Push(context.Background(), users.Path, PushOptions{CreatedBranchOnly: true})
	codeOf(t, err, CodeForbidden)
	if _, err := testenv.GitErr(bare, "rev-parse", "--verify", "refs/heads/users-own"); err == nil {
		t.Error("the user's branch was pushed")
	}
	// The user may push it.
	if _, err := m.Push(context.Background(), users.Path, PushOptions{}); err != nil {
		t.Fatal(err)
	}

	agents := create(t, m, p, "agents")
	if _, err := m.Push(context.Background(), agents.Path, PushOptions{CreatedBranchOnly: true}); err != nil {
		t.Fatal(err)
	}
}

func TestPushRefusesAWorkspaceOnItsOwnBaseAndABadRemote(t *testing.T) {
	t.Parallel()
	m, _, ws, _ := pushFixture(t)
	base := "feat/push"
	if err := m.SetMetadata(context.Background(), ws.Path, "base", &base); err != nil {
		t.Fatal(err)
	}
	_, err := m.Push(context.Background(), ws.Path, PushOptions{})
	codeOf(t, err, CodeInvalidInput)
	if !strings.Contains(err.Error(), "its own base") {
		t.Fatalf("err = %v", err)
	}
	_, err = m.Push(context.Background(), ws.Path, PushOptions{Remote: "--receive-pack=touch /tmp/x"})
	codeOf(t, err, CodeInvalidInput)
}

func TestRedactCredentialsTakesUserAndPasswordOutOfURLs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"fatal: unable to access 'https://me:ghp_abc@github.com/o/r.git/': 403": "fatal: unable to access 'https://***@github.com/o/r.git/': 403",
		"to ssh://git@host:22/r and http://tok@h/x":                             "to ssh://***@host:22/r and http://***@h/x",
		"no url here, a@b": "no url here, a@b",
	} {
		if got := RedactCredentials(in); got != want {
			t.Errorf("RedactCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}
