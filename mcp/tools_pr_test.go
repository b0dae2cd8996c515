package mcp

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/pullrequest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// prFamily is newFamily with a bare repository as the project's origin,
// a stand-in for gh first on PATH and the real pull request Creator.
func prFamily(t *testing.T) (*family, *testenv.GH, string) {
	t.Helper()
	gh := testenv.NewGH(t, "https://forge.example/team/proj/pull/12")
	t.Setenv("PATH", gh.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	f := newFamily(t, func(o *Options) {
		o.PullRequests = pullrequest.New(pullrequest.Options{Workspaces: o.Workspaces.(*workspace.Manager), Settings: settings.Default})
	})
	bare := testenv.BareRemote(t, f.h.project, "origin")
	return f, gh, bare
}

// TestCreatePRForOneselfAParentsChildAndTheUserOnly: an agent opens its
// own pull request and its children's, with its title and body as one
// argument each; a sibling's is refused and nothing is pushed; the user
// opens any. The URL is recorded as metadata pr, and the audit keeps no
// title.
func TestCreatePRForOneselfAParentsChildAndTheUserOnly(t *testing.T) {
	f, gh, bare := prFamily(t)
	for _, ws := range []workspace.Workspace{f.a, f.child, f.sibling} {
		testenv.CommitFile(t, ws.Path, "work-of-"+ws.Name+".txt", "done\n", "work of "+ws.Name)
	}
	createPR := func(token, header string, args map[string]any) (workspace.PullRequest, workspace.Code, string) {
		t.Helper()
		res := call(t, f.h.sessionAs(token, header), ToolCreatePR, args)
		if res.IsError {
			code, msg := errCode(t, res)
			return workspace.PullRequest{}, code, msg
		}
		var pr workspace.PullRequest
		okJSON(t, res, &pr)
		return pr, "", ""
	}
	pushed := func(branch string) bool {
		_, err := testenv.GitErr(bare, "rev-parse", "--verify", "refs/heads/"+branch)
		return err == nil
	}
	tokA := f.h.tokenOf(f.a.Path)
	title, body := `Parse "quoted" names; don't split`, "Why:\n- it's $(broken) {branch}"

	pr, code, msg := createPR(tokA, "", map[string]any{"title": title, "body": body})
	want := workspace.PullRequest{Remote: "origin", Branch: "featA", Base: "main", Pushed: true, URL: "https://forge.example/team/proj/pull/12"}
	if code != "" || pr != want {
		t.Fatalf("A's own pull request: %+v %s %s, want %+v", pr, code, msg, want)
	}
	calls := gh.Calls(t)
	if len(calls) != 1 || calls[0].Cwd != f.a.Path ||
		!slices.Equal(calls[0].Argv, []string{"pr", "create", "--head", "featA", "--base", "main", "--title", title, "--body", body}) {
		t.Fatalf("gh was called %+v", calls)
	}
	if md, err := f.h.mgr.Metadata(context.Background(), f.a.Path); err != nil || md["pr"] != want.URL {
		t.Errorf("A's metadata %v (%v), want pr %s", md, err, want.URL)
	}

	if pr, code, msg := createPR(tokA, "", map[string]any{"workspace": f.child.Path}); code != "" || !pr.Pushed || pr.Branch != "child" || !pushed("child") {
		t.Fatalf("A on its child: %+v %s %s", pr, code, msg)
	}
	if got := gh.Calls(t)[1].Argv; !slices.Equal(got, []string{"pr", "create", "--head", "child", "--base", "main", "--fill"}) {
		t.Errorf("gh for the child got %q", got)
	}

	if _, code, _ := createPR(tokA, "", map[string]any{"workspace": f.sibling.Path}); code != workspace.CodeForbidden || pushed("sibling") {
		t.Fatalf("A on a sibling: %s (pushed %v), want forbidden and nothing pushed", code, pushed("sibling"))
	}
	if _, code, _ := createPR(f.h.tokenOf(f.child.Path), "", map[string]any{"workspace": f.a.Path}); code != workspace.CodeForbidden {
		t.Errorf("a child on its parent: %s, want forbidden", code)
	}
	if n := len(gh.Calls(t)); n != 2 {
		t.Errorf("gh ran %d times, want 2", n)
	}

	if pr, code, msg := createPR(f.h.token.Value(), f.a.Path, map[string]any{"workspace": f.sibling.Path}); code != "" || !pr.Pushed || !pushed("sibling") {
		t.Fatalf("the user on a sibling: %+v %s %s", pr, code, msg)
	}

	audit, err := os.ReadFile(f.h.audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(audit), "quoted") || !strings.Contains(string(audit), ToolCreatePR) {
		t.Errorf("the audit holds the title, or not the call:\n%s", audit)
	}
}

// TestAnAgentCannotPushTheUsersBranchThroughCreatePR: a workspace on a
// branch that existed before it is the user's; its agent's call is
// refused and nothing is pushed, while the user may push it.
func TestAnAgentCannotPushTheUsersBranchThroughCreatePR(t *testing.T) {
	f, gh, bare := prFamily(t)
	testenv.Git(t, f.h.project, "branch", "release")
	rel := f.h.create("release")
	_, code := func() (workspace.PullRequest, workspace.Code) {
		res := call(t, f.h.sessionAs(f.h.tokenOf(rel.Path), ""), ToolCreatePR, nil)
		if !res.IsError {
			return workspace.PullRequest{}, ""
		}
		c, _ := errCode(t, res)
		return workspace.PullRequest{}, c
	}()
	if code != workspace.CodeForbidden {
		t.Fatalf("the agent on the user's branch: %q, want forbidden", code)
	}
	if _, err := testenv.GitErr(bare, "rev-parse", "--verify", "refs/heads/release"); err == nil || len(gh.Calls(t)) != 0 {
		t.Fatal("the user's branch was pushed, or gh ran, for an agent")
	}
	res := call(t, f.h.sessionAs(f.h.token.Value(), rel.Path), ToolCreatePR, nil)
	var pr workspace.PullRequest
	okJSON(t, res, &pr)
	if !pr.Pushed || pr.Branch != "release" {
		t.Fatalf("the user's call: %+v", pr)
	}
}

// TestCreatePRWithoutARemoteSaysSo: the answer's note says there is no
// remote, and nothing runs.
func TestCreatePRWithoutARemoteSaysSo(t *testing.T) {
	f, gh, _ := prFamily(t)
	var pr workspace.PullRequest
	okJSON(t, call(t, f.h.sessionAs(f.h.tokenOf(f.strange.Path), ""), ToolCreatePR, nil), &pr)
	if pr.Pushed || !strings.Contains(pr.Note, "has no git remote") || len(gh.Calls(t)) != 0 {
		t.Fatalf("no remote: %+v, gh calls %d", pr, len(gh.Calls(t)))
	}
}
