//go:build unix

package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// A merge or an update killed at any of its git steps must leave the old
// state or, once it recorded its ref moves, the new one after the next
// launch: never a branch moved without the other, never a checkout part
// way, never a commit lost. The merge runs in a helper process (this test
// binary, re-run) so that the kill is real.

// killedLandEnv makes TestHelperLandProcess run a merge or an update.
const killedLandEnv = "CODEHYDRA_TEST_KILLED_LAND"

// landSpec tells the helper what to do and where to stop.
type landSpec struct {
	Repo, Root, Path string
	// Update runs UpdateFromBase (rebase) instead of Merge.
	Update   bool
	Strategy Strategy
	Target   string
	// Point is "before:<git args>" or "after:<git args>" of a git command
	// the merge runs (the first whose arguments start so); the helper
	// then hangs until killed. Mark is the file it creates there.
	Point, Mark string
}

// TestHelperLandProcess is not a test: it is the process that the crash
// test kills in the middle of a merge.
func TestHelperLandProcess(t *testing.T) {
	raw := os.Getenv(killedLandEnv)
	if raw == "" {
		t.Skip("helper process for the merge crash tests")
	}
	var spec landSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{Projects: []string{spec.Repo}, WorktreeRoot: spec.Root})
	when, gitArgs, _ := strings.Cut(spec.Point, ":")
	m.git.command = hangAtGit(when, gitArgs, spec.Mark)
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	var err error
	if spec.Update {
		_, err = m.UpdateFromBase(context.Background(), spec.Path, UpdateRebase)
	} else {
		_, err = m.Merge(context.Background(), spec.Path, MergeOptions{Strategy: spec.Strategy, Target: spec.Target})
	}
	fmt.Println("land returned:", err)
}

// killLandAt runs the helper with spec until it reaches its point, then
// kills it and every process it started.
func killLandAt(t *testing.T, spec landSpec) {
	t.Helper()
	spec.Mark = filepath.Join(t.TempDir(), "mark")
	cmd, out := startHelperTest(t, "TestHelperLandProcess", killedLandEnv, spec)
	killAtMark(t, cmd, out, spec.Point, spec.Mark)
}

// landState is what a merge may change: every ref, and the files and
// status of the main checkout and of the workspace.
type landState struct {
	refs     string
	main, ws map[string]string
	journals int
}

func readLandState(t *testing.T, f *landFixture) landState {
	t.Helper()
	recs, err := readLandJournals(filepath.Join(f.p.Path, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	return landState{refs: refs(t, f.p.Path), main: snapshot(t, f.p.Path), ws: snapshot(t, f.ws.Path), journals: len(recs)}
}

func (s landState) same(o landState) bool {
	eq := func(a, b map[string]string) bool {
		if len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if b[k] != v {
				return false
			}
		}
		return true
	}
	return s.refs == o.refs && eq(s.main, o.main) && eq(s.ws, o.ws) && s.journals == o.journals
}

func TestAMergeKilledAtAnyGitStepLeavesTheOldStateOrTheNewOne(t *testing.T) {
	t.Parallel()
	commitTree := "-c user.useConfigOnly=true commit-tree"
	tests := []struct {
		name     string
		spec     landSpec
		point    string
		newState bool
	}{
		// A rebase into main, which the main checkout has: the
		// workspace's branch moves in its worktree, then main in the
		// main checkout.
		{name: "rebase", spec: landSpec{Strategy: StrategyRebase}, point: "after:merge-tree"},
		{name: "rebase", spec: landSpec{Strategy: StrategyRebase}, point: "after:" + commitTree},
		{name: "rebase", spec: landSpec{Strategy: StrategyRebase}, point: "before:reset -q --keep", newState: true},
		{name: "rebase", spec: landSpec{Strategy: StrategyRebase}, point: "after:reset -q --keep", newState: true},
		{name: "rebase", spec: landSpec{Strategy: StrategyRebase}, point: "before:merge -q --ff-only", newState: true},
		{name: "rebase", spec: landSpec{Strategy: StrategyRebase}, point: "after:merge -q --ff-only", newState: true},
		// A merge commit into a branch no worktree has.
		{name: "merge into release", spec: landSpec{Target: "release"}, point: "before:" + commitTree},
		{name: "merge into release", spec: landSpec{Target: "release"}, point: "before:update-ref", newState: true},
		{name: "merge into release", spec: landSpec{Target: "release"}, point: "after:update-ref", newState: true},
		// A squash into main.
		{name: "squash", spec: landSpec{Strategy: StrategySquash}, point: "after:" + commitTree},
		{name: "squash", spec: landSpec{Strategy: StrategySquash}, point: "before:merge -q --ff-only", newState: true},
		// An update from the base, by rebase.
		{name: "update", spec: landSpec{Update: true}, point: "after:" + commitTree},
		{name: "update", spec: landSpec{Update: true}, point: "before:reset -q --keep", newState: true},
		{name: "update", spec: landSpec{Update: true}, point: "after:reset -q --keep", newState: true},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.point, func(t *testing.T) {
			t.Parallel()
			// The state a merge run to its end leaves, from a twin
			// fixture: the commits differ by their dates only.
			done := newLandFixture(t)
			testenv.Git(t, done.p.Path, "branch", "release", done.main)
			if tt.spec.Update {
				if _, err := done.m.UpdateFromBase(context.Background(), done.ws.Path, UpdateRebase); err != nil {
					t.Fatal(err)
				}
			} else if _, err := done.m.Merge(context.Background(), done.ws.Path, MergeOptions{Strategy: tt.spec.Strategy, Target: tt.spec.Target}); err != nil {
				t.Fatal(err)
			}

			f := newLandFixture(t)
			testenv.Git(t, f.p.Path, "branch", "release", f.main)
			old := readLandState(t, f)
			spec := tt.spec
			spec.Repo, spec.Root, spec.Path, spec.Point = f.p.Path, filepath.Dir(filepath.Dir(filepath.Dir(f.ws.Path))), f.ws.Path, tt.point
			killLandAt(t, spec)

			relaunched := NewManager(Options{Projects: []string{f.p.Path}, WorktreeRoot: spec.Root})
			if err := relaunched.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			now := readLandState(t, f)
			if now.journals != 0 {
				t.Errorf("%d merge records left after the relaunch", now.journals)
			}
			if !tt.newState {
				if !now.same(old) {
					t.Fatalf("killed before any ref moved, the state changed:\nrefs %s\nwas  %s\nmain %v\nwas  %v\nws %v\nwas %v",
						now.refs, old.refs, now.main, old.main, now.ws, old.ws)
				}
				return
			}
			if now.same(old) {
				t.Fatal("the relaunch did not finish the recorded merge")
			}
			f.checkLikeDone(t, done)
		})
	}
}

// checkLikeDone checks that f is in the state done's finished merge left
// (the new commits' IDs aside): the same files and statuses in the main
// checkout and the workspace, the same trees at each branch, nothing lost.
func (f *landFixture) checkLikeDone(t *testing.T, done *landFixture) {
	t.Helper()
	for _, branch := range []string{"main", "feat", "release"} {
		got, want := testenv.Git(t, f.p.Path, "rev-parse", branch+"^{tree}"), testenv.Git(t, done.p.Path, "rev-parse", branch+"^{tree}")
		if got != want {
			t.Errorf("branch %s has tree %s, a finished merge %s", branch, got, want)
		}
		// Sorted: commits made within the same second list in either order.
		subjects := func(repo string) string {
			lines := strings.Split(testenv.Git(t, repo, "log", "--format=%s", branch), "\n")
			slices.Sort(lines)
			return strings.Join(lines, "\n")
		}
		if gotLog, wantLog := subjects(f.p.Path), subjects(done.p.Path); gotLog != wantLog {
			t.Errorf("branch %s's history:\n%s\nafter a finished merge:\n%s", branch, gotLog, wantLog)
		}
	}
	for _, dirs := range [][2]string{{f.p.Path, done.p.Path}, {f.ws.Path, done.ws.Path}} {
		got, want := snapshot(t, dirs[0]), snapshot(t, dirs[1])
		for _, m := range []map[string]string{got, want} {
			delete(m, "<head>")
		}
		rel := func(m map[string]string, root string) map[string]string {
			out := map[string]string{}
			for k, v := range m {
				out[strings.TrimPrefix(k, root)] = v
			}
			return out
		}
		sameSnapshot(t, dirs[0], rel(want, dirs[1]), rel(got, dirs[0]))
	}
	if _, err := testenv.GitErr(f.p.Path, "cat-file", "-e", f.head+"^{commit}"); err != nil {
		t.Errorf("the workspace's old head is lost: %v", err)
	}
	if out, err := testenv.GitErr(f.p.Path, "fsck", "--no-progress"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}
