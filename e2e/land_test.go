//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// TestAParentAgentReviewsAndLandsItsChildsWork is issue 23's loop with the
// built binary and real opencode agents, each confined, driven by the fake
// model: a's agent starts a child, the child's agent commits its work from
// its own shell, a's agent reads the child's diff, sends it a review that
// reaches the child's agent once, sees it in workspace_list, and merges the
// child into main with cleanup, after the user committed on main. The
// user's checkout of main is clean, so it moves with the merge commit;
// the child's worktree and branch are gone after.
func TestAParentAgentReviewsAndLandsItsChildsWork(t *testing.T) {
	s := launchSandboxed(t, nil)
	parent := s.agent(t, s.a)

	out, err := parent.tool("codehydra_workspace_create", map[string]any{"name": "child"})
	if err != nil {
		t.Fatalf("a creates its child: %v\n%s", err, out)
	}
	var created struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Path == "" {
		t.Fatalf("workspace_create answered %q (%v); want the child's path", out, err)
	}
	child := created.Path
	s.poll(t, "the child's agent to be ready", func() bool { return agentRecord(t, child).Port != 0 })

	// The child's agent does its work and commits it from its own shell.
	work := s.agent(t, child).bash("printf 'hello from the child\\n' > child.txt && git add child.txt && " +
		"git -c user.name=Child -c user.email=child@example.com commit -q -m 'child: add child.txt' && git log --format=%s -1")
	wantLines(t, work, "child: add child.txt")

	// a sees what its child changed.
	out, err = parent.tool("codehydra_workspace_get_diff", map[string]any{"workspace": child})
	if err != nil {
		t.Fatalf("a reads its child's diff: %v\n%s", err, out)
	}
	wantLines(t, out, `"path":"child.txt"`, `"status":"added"`, "+hello from the child")

	// a reviews it; the review reaches the child's agent, once.
	const comment = "Say hi to the reader on this line"
	out, err = parent.tool("codehydra_workspace_send_review", map[string]any{
		"workspace": child, "summary": "Good start, one change",
		"comments": []any{map[string]any{"file": "child.txt", "line": 1, "text": comment}},
	})
	if err != nil {
		t.Fatalf("a reviews its child: %v\n%s", err, out)
	}
	reached := func() int {
		n := 0
		for _, r := range s.model.Requests() {
			if r.LastRole == "user" && strings.Contains(r.LastText, comment) && strings.Contains(r.LastText, "child.txt:1") {
				n++
			}
		}
		return n
	}
	s.poll(t, "the review to reach the child's agent", func() bool { return reached() > 0 })
	out, err = parent.tool("codehydra_workspace_list", map[string]any{})
	if err != nil {
		t.Fatalf("a lists its workspaces: %v\n%s", err, out)
	}
	var list struct {
		Workspaces []struct {
			Path          string `json:"path"`
			ChangedFiles  int    `json:"changedFiles"`
			MergesCleanly *bool  `json:"mergesCleanly"`
			Ahead         int    `json:"ahead"`
			Review        *struct {
				State string `json:"state"`
			} `json:"review"`
		} `json:"workspaces"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("workspace_list answered %q: %v", out, err)
	}
	found := false
	for _, e := range list.Workspaces {
		if e.Path != child {
			continue
		}
		found = true
		if e.ChangedFiles != 1 || e.Ahead != 1 || e.MergesCleanly == nil || !*e.MergesCleanly || e.Review == nil || e.Review.State != "delivered" {
			t.Errorf("workspace_list's child = %+v; want 1 changed file, 1 ahead, merging cleanly, its review delivered", e)
		}
	}
	if !found {
		t.Fatalf("workspace_list lacks the child:\n%s", out)
	}

	// a may not land its own work; it lands its child's, and deletes it.
	if out, err := parent.tool("codehydra_workspace_merge", map[string]any{"workspace": s.a}); err == nil || !strings.Contains(out+err.Error(), "forbidden") {
		t.Errorf("a merging itself answered %q, %v; want forbidden", out, err)
	}
	// Meanwhile the user committed on main, in the main checkout: the
	// merge makes a merge commit, and that checkout moves with it.
	testenv.CommitFile(t, s.repo, "user.txt", "the user's own\n", "user: add user.txt")
	out, err = parent.tool("codehydra_workspace_merge", map[string]any{"workspace": child, "cleanup": true})
	if err != nil {
		t.Fatalf("a merges its child: %v\n%s", err, out)
	}
	wantLines(t, out, `"merged":true`, `"verified":true`)
	if log := testenv.Git(t, s.repo, "log", "--format=%s", "main"); !strings.Contains(log, "child: add child.txt") ||
		!strings.HasPrefix(log, "Merge branch 'child' into main\n") || !strings.Contains(log, "user: add user.txt") {
		t.Errorf("main's log lacks the merge of the child's commit and the user's:\n%s", log)
	}
	unchanged(t, filepath.Join(s.repo, "child.txt"), "hello from the child\n")
	s.poll(t, "the child's worktree and branch to go", func() bool {
		_, statErr := os.Stat(child)
		_, branchErr := testenv.GitErr(s.repo, "rev-parse", "--verify", "--quiet", "refs/heads/child")
		return os.IsNotExist(statErr) && branchErr != nil
	})
	if st := testenv.Git(t, s.repo, "status", "--porcelain"); st != "" {
		t.Errorf("the user's checkout of main is not clean after the merge:\n%s", st)
	}
	time.Sleep(2 * time.Second) // a second delivery would show by now
	if n := reached(); n != 1 {
		t.Errorf("the child's agent got the review %d times, want 1", n)
	}
	s.stop(t)
}
