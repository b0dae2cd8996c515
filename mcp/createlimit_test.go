package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// limitedHarness is a harness whose workspace_create allows count creates
// per caller per hour, on a clock the test moves.
func limitedHarness(t *testing.T, count int) (*harness, *fakeClock) {
	t.Helper()
	return limitedHarnessWith(t, CreateLimit{Count: count, Per: time.Hour})
}

// limitedHarnessWith is limitedHarness with the whole limit given.
func limitedHarnessWith(t *testing.T, l CreateLimit) (*harness, *fakeClock) {
	t.Helper()
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir()})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
	limited := LimitCreates(mgr, l)
	limited.(*createLimited).now = clock.now
	h := startHarness(t, limited, project)
	h.mgr = mgr
	return h, clock
}

func TestWorkspaceCreateIsLimitedPerCallerWithBudgetsOfTheirOwn(t *testing.T) {
	h, clock := limitedHarness(t, 2)
	a, b := h.create("a"), h.create("b")
	callers := []struct {
		name  string
		token string
		ws    string
	}{
		{"user", h.token.Value(), a.Path},
		{"workspace a", h.tokenOf(a.Path), a.Path},
		{"workspace b", h.tokenOf(b.Path), b.Path},
	}
	for _, c := range callers {
		cs := h.sessionAs(c.token, c.ws)
		prefix := strings.ReplaceAll(c.name, " ", "-")
		for i := range 2 {
			var created workspace.Workspace
			okJSON(t, call(t, cs, ToolCreate, map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i)}), &created)
		}
		clock.advance(10 * time.Minute)
		code, msg := errCode(t, call(t, cs, ToolCreate, map[string]any{"name": prefix + "-over"}))
		if code != workspace.CodeRateLimited {
			t.Fatalf("%s's third create: %s (%s), want rate-limited", c.name, code, msg)
		}
		for _, want := range []string{"2 workspaces within 60 minutes", "workspaceCreateLimit", "retry in 50m0s"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s's rate-limited message %q does not say %q", c.name, msg, want)
			}
		}
		if got := testenv.Git(t, h.project, "branch", "--list", prefix+"-over"); got != "" {
			t.Fatalf("a refused create made branch %q", got)
		}
		clock.advance(-10 * time.Minute)
	}

	// A create that fails uses none of the budget; the window slides.
	clock.advance(time.Hour)
	cs := h.sessionAs(h.tokenOf(a.Path), a.Path)
	if code, msg := errCode(t, call(t, cs, ToolCreate, map[string]any{"name": "a"})); code != workspace.CodeConflict {
		t.Fatalf("creating an existing branch: %s (%s), want conflict", code, msg)
	}
	for _, name := range []string{"later-1", "later-2"} {
		var created workspace.Workspace
		okJSON(t, call(t, cs, ToolCreate, map[string]any{"name": name}), &created)
	}
}

func TestConcurrentCreatesOfOneCallerStayWithinTheLimit(t *testing.T) {
	h, _ := limitedHarness(t, 3)
	cs := h.session("")
	var wg sync.WaitGroup
	codes := make([]workspace.Code, 8)
	for i := range codes {
		wg.Go(func() {
			res := call(t, cs, ToolCreate, map[string]any{"projectPath": h.project, "name": fmt.Sprintf("c-%d", i)})
			if res.IsError {
				codes[i], _ = errCode(t, res)
			}
		})
	}
	wg.Wait()
	ok, limited := 0, 0
	for _, c := range codes {
		switch c {
		case "":
			ok++
		case workspace.CodeRateLimited:
			limited++
		}
	}
	if ok != 3 || limited != 5 {
		t.Fatalf("8 concurrent creates: %d made, %d rate-limited (codes %v), want 3 and 5", ok, limited, codes)
	}
}

// TestAChainOfChildrenSharesItsRootsBudgetAndCap: each child workspace
// had a workspace_create budget of its own, so an agent could chain
// children past the per-caller limit (A makes B, B makes C, …, each with
// a fresh budget). Creates now count against the root of the createdBy
// chain, and the live descendants of one workspace are capped.
func TestAChainOfChildrenSharesItsRootsBudgetAndCap(t *testing.T) {
	h, clock := limitedHarnessWith(t, CreateLimit{Count: 3, Per: time.Hour, Descendants: 4})
	root := h.create("root")
	create := func(by workspace.Workspace, name string) (workspace.Workspace, workspace.Code, string) {
		t.Helper()
		res := call(t, h.sessionAs(h.tokenOf(by.Path), by.Path), ToolCreate, map[string]any{"name": name})
		if res.IsError {
			code, msg := errCode(t, res)
			return workspace.Workspace{}, code, msg
		}
		var ws workspace.Workspace
		okJSON(t, res, &ws)
		return ws, "", ""
	}
	// root → c1 → c2 → c3: three creates, each by a different agent, all
	// from root's budget of 3.
	c1, _, _ := create(root, "c1")
	c2, _, _ := create(c1, "c2")
	c3, code, msg := create(c2, "c3")
	if code != "" {
		t.Fatalf("the third create of the chain: %s %s", code, msg)
	}
	if _, code, msg := create(c3, "c4"); code != workspace.CodeRateLimited || !strings.Contains(msg, "3 workspaces within 60 minutes") {
		t.Fatalf("a fourth create down the chain: %s %q, want rate-limited (root's budget of 3 spent)", code, msg)
	}
	if _, code, _ := create(root, "c5"); code != workspace.CodeRateLimited {
		t.Fatalf("root's own fourth create: %s, want rate-limited", code)
	}
	if got := testenv.Git(t, h.project, "branch", "--list", "c4", "c5"); got != "" {
		t.Fatalf("refused creates made branches %q", got)
	}
	// A workspace the user made has a budget of its own.
	other := h.create("other")
	if _, code, msg := create(other, "o1"); code != "" {
		t.Fatalf("another root's create: %s %s", code, msg)
	}

	// The window passes: root's budget is back, but its descendants are
	// capped at 4 alive (c1, c2, c3 and one more).
	clock.advance(2 * time.Hour)
	if _, code, msg := create(c3, "c6"); code != "" {
		t.Fatalf("the fourth descendant: %s %s", code, msg)
	}
	_, code, msg = create(c1, "c7")
	if code != workspace.CodeRateLimited || !strings.Contains(msg, "number 4") || !strings.Contains(msg, "descendants") {
		t.Fatalf("a fifth descendant: %s %q, want refused by the cap", code, msg)
	}
	// Deleting one makes room; a deleted creator stays its children's
	// root, so deleting the middle of the chain frees nothing else.
	if err := h.mgr.Delete(context.Background(), c2.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, code, msg := create(c3, "c8"); code != "" {
		t.Fatalf("after a delete below the cap: %s %s", code, msg)
	}
	if _, code, _ := create(c3, "c9"); code != workspace.CodeRateLimited {
		t.Fatalf("past the cap again: %s, want rate-limited", code)
	}
}

// TestAWorkspaceWithBrokenGitKeepsNoOneFromCreating: counting the
// descendants reads every workspace's creator; one whose git an agent
// broke (its .git file removed) made every other agent's create fail.
func TestAWorkspaceWithBrokenGitKeepsNoOneFromCreating(t *testing.T) {
	h, _ := limitedHarnessWith(t, CreateLimit{Count: 5, Per: time.Hour, Descendants: 5})
	root, other := h.create("root"), h.create("other")
	if err := os.Remove(filepath.Join(other.Path, ".git")); err != nil {
		t.Fatal(err)
	}
	res := call(t, h.sessionAs(h.tokenOf(root.Path), root.Path), ToolCreate, map[string]any{"name": "child"})
	if res.IsError {
		t.Fatalf("a create beside a broken workspace: %s", text(t, res))
	}
}
