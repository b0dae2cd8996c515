package pullrequest

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "pullrequest-test-home-"))
}

const prURL = "https://forge.example/team/app/pull/7"

// fixture is a project whose origin is a local bare repository, a
// workspace with a commit of its own, a stand-in for gh first on PATH, and
// a Creator over the real manager.
type fixture struct {
	m    *workspace.Manager
	p    workspace.Project
	ws   workspace.Workspace
	bare string
	gh   *testenv.GH
	set  settings.Settings
	c    *Creator
	logs *testenv.SyncBuffer
}

func newFixture(t *testing.T, withRemote bool) *fixture {
	t.Helper()
	f := &fixture{set: settings.Default(), logs: &testenv.SyncBuffer{}}
	f.gh = testenv.NewGH(t, prURL)
	t.Setenv("PATH", f.gh.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.m = workspace.NewManager(workspace.Options{WorktreeRoot: root})
	if f.p, err = f.m.AddProject(context.Background(), testenv.GitRepo(t, "app")); err != nil {
		t.Fatal(err)
	}
	if withRemote {
		f.bare = testenv.BareRemote(t, f.p.Path, "origin")
	}
	if f.ws, err = f.m.Create(context.Background(), workspace.CreateOptions{ProjectPath: f.p.Path, Name: "feat/pr"}); err != nil {
		t.Fatal(err)
	}
	testenv.CommitFile(t, f.ws.Path, "work.txt", "the agent's work\n", "the agent's commit")
	f.c = New(Options{Workspaces: f.m, Settings: func() settings.Settings { return f.set },
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return f
}

func (f *fixture) create(t *testing.T, o workspace.PullRequestOptions) (workspace.PullRequest, error) {
	t.Helper()
	return f.c.Create(context.Background(), f.ws.Path, o)
}

func (f *fixture) metadataPR(t *testing.T) string {
	t.Helper()
	md, err := f.m.Metadata(context.Background(), f.ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	return md[MetadataKey]
}

func TestCreatePushesRunsGhInTheWorkspaceAndRecordsTheURL(t *testing.T) {
	f := newFixture(t, true)
	t.Setenv("GH_TOKEN", "gho_sekret-token-value")

	pr, err := f.create(t, workspace.PullRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := workspace.PullRequest{Remote: "origin", Branch: "feat/pr", Base: "main", Pushed: true, URL: prURL}
	if pr != want {
		t.Fatalf("Create = %+v, want %+v", pr, want)
	}
	calls := f.gh.Calls(t)
	if len(calls) != 1 {
		t.Fatalf("gh ran %d times, want once", len(calls))
	}
	call := calls[0]
	if wantArgv := []string{"pr", "create", "--head", "feat/pr", "--base", "main", "--fill"}; !slices.Equal(call.Argv, wantArgv) {
		t.Errorf("gh got %q, want %q", call.Argv, wantArgv)
	}
	if call.Cwd != f.ws.Path {
		t.Errorf("gh ran in %s, want the workspace %s", call.Cwd, f.ws.Path)
	}
	head := testenv.Git(t, f.ws.Path, "rev-parse", "HEAD")
	if got := testenv.Git(t, f.bare, "rev-parse", "refs/heads/feat/pr"); got != head {
		t.Errorf("the remote's feat/pr is at %s, want the workspace's head %s", got, head)
	}
	if got := f.metadataPR(t); got != prURL {
		t.Errorf("metadata pr = %q, want %q", got, prURL)
	}

	// gh gets CodeHydra's environment (its token) and CodeHydra's own git:
	// no hooks, git's folders pinned to the worktree's.
	gitDir, _, err := f.m.GitDirs(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"GH_TOKEN=gho_sekret-token-value", "GH_PROMPT_DISABLED=1", "GIT_DIR=" + gitDir,
		"GIT_WORK_TREE=" + f.ws.Path, "GIT_CONFIG_KEY_1=core.hooksPath", "GIT_CONFIG_VALUE_1=" + os.DevNull} {
		if !slices.Contains(call.Env, kv) {
			t.Errorf("gh's environment has no %s", kv)
		}
	}
	if call.GitDir != gitDir {
		t.Errorf("git in gh's environment takes %q as its folder, want %s", call.GitDir, gitDir)
	}
	if logs := f.logs.String(); strings.Contains(logs, "sekret") || !strings.Contains(logs, "pull request command ran") {
		t.Errorf("the log holds the token, or nothing of the run:\n%s", logs)
	}
}

func TestCreateKeepsATitleAndBodyWithSpacesAndQuotesInOneArgumentEach(t *testing.T) {
	f := newFixture(t, true)
	title := `Fix "the" parser's {body} $(touch /tmp/pwned) ; rm -rf ~`
	body := "First line.\n\n- a list item with 'quotes' and \"more\"\n`code` $HOME {title}"
	if _, err := f.create(t, workspace.PullRequestOptions{Title: title, Body: body}); err != nil {
		t.Fatal(err)
	}
	want := []string{"pr", "create", "--head", "feat/pr", "--base", "main", "--title", title, "--body", body}
	if got := f.gh.Calls(t)[0].Argv; !slices.Equal(got, want) {
		t.Errorf("gh got %q, want %q", got, want)
	}
}

func TestCreateRunsTheUsersPRCommandWithItsPlaceholders(t *testing.T) {
	f := newFixture(t, true)
	f.set.PRCommand = f.gh.Path + ` mr new "--into={remote}/{base}" --source {branch} -t '{title}' --description={body}`
	f.set.ProjectSetup[f.p.Path] = settings.ProjectSetup{Remote: "origin"}
	if _, err := f.create(t, workspace.PullRequestOptions{Title: "A title", Body: "A body"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"mr", "new", "--into=origin/main", "--source", "feat/pr", "-t", "A title", "--description=A body"}
	if got := f.gh.Calls(t)[0].Argv; !slices.Equal(got, want) {
		t.Errorf("the command got %q, want %q", got, want)
	}
}

func TestCreateWithoutARemoteSaysSoAndRunsNothing(t *testing.T) {
	f := newFixture(t, false)
	pr, err := f.create(t, workspace.PullRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Pushed || pr.URL != "" || !strings.Contains(pr.Note, "has no git remote") || !strings.Contains(pr.Note, "git remote add origin") {
		t.Fatalf("Create = %+v, want a note that there is no remote", pr)
	}
	if n := len(f.gh.Calls(t)); n != 0 {
		t.Errorf("gh ran %d times without a remote", n)
	}
}

func TestCreateWithoutGhStillPushesAndSaysSo(t *testing.T) {
	f := newFixture(t, true)
	// A PATH with git and nothing else.
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)

	pr, err := f.create(t, workspace.PullRequestOptions{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Pushed || pr.URL != "" || !strings.Contains(pr.Note, "gh is not on PATH") || !strings.Contains(pr.Note, "prCommand") {
		t.Fatalf("Create = %+v, want pushed and a note that gh is missing", pr)
	}
	if _, err := testenv.GitErr(f.bare, "rev-parse", "--verify", "refs/heads/feat/pr"); err != nil {
		t.Errorf("the branch was not pushed: %v", err)
	}
	if got := f.metadataPR(t); got != "" {
		t.Errorf("metadata pr = %q without a pull request", got)
	}
}

func TestCreateAfterARejectedPushRunsNothing(t *testing.T) {
	f := newFixture(t, true)
	other := filepath.Join(t.TempDir(), "other")
	testenv.Git(t, "", "clone", "-q", f.bare, other)
	testenv.Git(t, other, "checkout", "-q", "-b", "feat/pr")
	testenv.CommitFile(t, other, "theirs.txt", "theirs\n", "their commit")
	testenv.Git(t, other, "push", "-q", "origin", "feat/pr")

	_, err := f.create(t, workspace.PullRequestOptions{})
	if workspace.CodeOf(err) != workspace.CodeConflict || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("err = %v, want a conflict saying the push was rejected", err)
	}
	if n := len(f.gh.Calls(t)); n != 0 {
		t.Errorf("gh ran %d times after a rejected push", n)
	}
}

func TestAFailingCommandIsAnErrorWithItsWordsAndNoCredentials(t *testing.T) {
	f := newFixture(t, true)
	f.gh.Reply(t, "", "could not create: https://hydra:ghp_leak@forge.example/x denied\n", 1)
	pr, err := f.create(t, workspace.PullRequestOptions{})
	if err == nil {
		t.Fatalf("Create = %+v, want an error", pr)
	}
	msg := err.Error()
	if !strings.Contains(msg, "pushed feat/pr to origin, but gh failed (exit status 1)") || !strings.Contains(msg, "https://***@forge.example/x denied") || strings.Contains(msg, "ghp_leak") {
		t.Errorf("err = %q", msg)
	}
	if strings.Contains(f.logs.String(), "ghp_leak") {
		t.Errorf("the log holds the credential:\n%s", f.logs.String())
	}
	if got := f.metadataPR(t); got != "" {
		t.Errorf("metadata pr = %q after a failure", got)
	}
}

func TestACommandThatPrintsNoURLRecordsNothingAndSaysSo(t *testing.T) {
	f := newFixture(t, true)
	f.gh.Reply(t, "done, see the forge\n", "", 0)
	pr, err := f.create(t, workspace.PullRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pr.URL != "" || !pr.Pushed || !strings.Contains(pr.Note, "printed no http(s) URL") {
		t.Fatalf("Create = %+v", pr)
	}
	if got := f.metadataPR(t); got != "" {
		t.Errorf("metadata pr = %q", got)
	}
}

func TestACommandPastItsTimeoutIsStopped(t *testing.T) {
	f := newFixture(t, true)
	f.c.o.Timeout = 500 * time.Millisecond
	f.gh.Sleep(t, 30)
	start := time.Now()
	_, err := f.create(t, workspace.PullRequestOptions{})
	if workspace.CodeOf(err) != workspace.CodeTimeout || !strings.Contains(err.Error(), "ran longer than 500ms") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Create took %s, want the command stopped at its timeout", d)
	}
}

func TestCreateRefusesTextNoCommandLineCarries(t *testing.T) {
	f := newFixture(t, true)
	for _, o := range []workspace.PullRequestOptions{
		{Body: "a body alone"},
		{Title: "two\nlines"},
		{Title: "t", Body: "nul\x00"},
		{Title: strings.Repeat("t", maxTitle+1)},
		{Title: "--web"},
		{Title: "-t", Body: "an option's value"},
	} {
		if _, err := f.create(t, o); workspace.CodeOf(err) != workspace.CodeInvalidInput {
			t.Errorf("Create(%.40q, %.40q) = %v, want invalid input", o.Title, o.Body, err)
		}
	}
	if n := len(f.gh.Calls(t)); n != 0 {
		t.Errorf("gh ran %d times", n)
	}
	if _, err := testenv.GitErr(f.bare, "rev-parse", "--verify", "refs/heads/feat/pr"); err == nil {
		t.Error("the branch was pushed for a refused call")
	}
}

func TestLastURLIsTheLastOnStdout(t *testing.T) {
	for out, want := range map[string]string{
		"Creating…\nhttps://a.example/1\nhttps://b.example/o/r/pull/2\n": "https://b.example/o/r/pull/2",
		"Opened (see http://git.local/mr/3).":                            "http://git.local/mr/3",
		"nothing here":                                                   "",
	} {
		if got := lastURL(out); got != want {
			t.Errorf("lastURL(%q) = %q, want %q", out, got, want)
		}
	}
}
