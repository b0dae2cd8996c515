package workspace

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// plan is a merge worked out by its preflight: what the preflight
// answers, and what Merge needs of it.
type plan struct {
	ws Workspace
	p  *project
	pf Preflight
	// tree is the tree of the merge of the head into the target (merge
	// and squash, when they merge cleanly).
	tree string
}

// Preflight says what Merge would do with the workspace at wsPath and o,
// and whether it can: the workspace's uncommitted and untracked files
// (any refuses the merge), the files a merge conflicts in (found with git
// merge-tree; for a rebase, by replaying the commits, and whether the
// replay would leave out changes made in merge commits: see rebaseDrops),
// whether the target branch is checked out in a worktree (the main
// checkout included, and a worktree rebasing or bisecting it: a blocker)
// and which of its tracked files are changed there. It writes no working
// tree, no index and no ref; it may store objects (the trees and commits
// of the trial merge), which nothing refers to.
//
// It refuses (CodeInvalidInput) a workspace on a detached HEAD, an
// unknown strategy, a target that is no local branch spelled exactly as
// git lists it or is a symbolic ref (see exactBranch), and the
// workspace's own branch as the target.
func (m *Manager) Preflight(ctx context.Context, wsPath string, o MergeOptions) (Preflight, error) {
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return Preflight{}, err
	}
	pl, err := m.preflight(ctx, ws, p, o)
	if err != nil {
		return Preflight{}, err
	}
	return pl.pf, nil
}

// landBranch is the branch checked out in the workspace and its head; a
// detached HEAD is refused, since only a branch can be landed or updated.
func (m *Manager) landBranch(ctx context.Context, ws Workspace) (branch, head string, err error) {
	branch, err = m.currentBranch(ctx, ws.Path)
	if err != nil {
		return "", "", classify(err, CodeInternal, "cannot read the branch of %s", ws.Path)
	}
	if branch == "" {
		return "", "", Errorf(CodeInvalidInput, "the workspace %s is on a detached HEAD; check out a branch first", ws.Path)
	}
	if head, err = m.commitOf(ctx, ws.Path, "HEAD"); err != nil || head == "" {
		return "", "", classify(err, CodeInternal, "cannot read the head of %s", ws.Path)
	}
	return branch, head, nil
}

// uncommitted names the workspace's changed and untracked files.
func (m *Manager) uncommitted(ctx context.Context, ws Workspace) ([]string, error) {
	c, err := m.Changes(ctx, ws.Path)
	if err != nil {
		return nil, err
	}
	return append(c.Changed, c.Untracked...), nil
}

func (m *Manager) preflight(ctx context.Context, ws Workspace, p *project, o MergeOptions) (*plan, error) {
	switch o.Strategy {
	case "":
		o.Strategy = StrategyMerge
	case StrategyMerge, StrategySquash, StrategyRebase:
	default:
		return nil, Errorf(CodeInvalidInput, "unknown strategy %q; use merge, squash or rebase", o.Strategy)
	}
	branch, head, err := m.landBranch(ctx, ws)
	if err != nil {
		return nil, err
	}
	target := strings.TrimPrefix(o.Target, "refs/heads/")
	if target == "" {
		if target = m.baseOf(ctx, p, branch); target == "" {
			return nil, Errorf(CodeInvalidInput, "the workspace has no base to merge into; name a target branch or set its metadata key base")
		}
		if target, err = m.localBranchOf(ctx, p, target); err != nil {
			return nil, err
		}
	}
	if err := validateBase(target); err != nil {
		return nil, err
	}
	if target == branch {
		return nil, Errorf(CodeInvalidInput, "%s is the workspace's own branch; merge it into another branch, such as its base", target)
	}
	if err := m.exactBranch(ctx, p, target); err != nil {
		return nil, err
	}
	targetHead, err := m.commitOf(ctx, p.Path, "refs/heads/"+target)
	if err != nil {
		return nil, classify(err, CodeInternal, "cannot read branch %s", target)
	}
	if targetHead == "" {
		return nil, Errorf(CodeInvalidInput, "there is no local branch %s to merge into; name an existing branch of %s", target, p.Path)
	}
	pf := Preflight{Workspace: ws.Path, Branch: branch, Head: head, Target: target, Strategy: o.Strategy, TargetHead: targetHead}
	pl := &plan{ws: ws, p: p}

	out, err := m.git.run(ctx, p.Path, "rev-list", "--left-right", "--count", targetHead+"..."+head)
	if err != nil {
		return nil, classify(err, CodeInvalidInput, "%s and the workspace's head have no commit in common", target)
	}
	pf.Behind, pf.Ahead = parseLeftRight(out)
	if pf.Uncommitted, err = m.uncommitted(ctx, ws); err != nil {
		return nil, err
	}
	pf.UpToDate = pf.Ahead == 0 && len(pf.Uncommitted) == 0

	var at, drops string
	if o.Strategy == StrategyRebase {
		// A target that the head has all of is fast-forwarded: nothing
		// is replayed then.
		if pf.Behind > 0 {
			if at, drops, err = m.trialRebase(ctx, p.Path, targetHead, head, branch, &pf); err != nil {
				return nil, classify(err, CodeInternal, "cannot replay the commits of %s onto %s", branch, target)
			}
		}
	} else if pl.tree, pf.Conflicts, err = m.mergeTrees(ctx, p.Path, targetHead, head); err != nil {
		return nil, classify(err, CodeInternal, "cannot merge %s into %s in memory", branch, target)
	}

	if err := m.targetCheckout(ctx, p, &pf); err != nil {
		return nil, err
	}

	if len(pf.Uncommitted) > 0 {
		pf.Blockers = append(pf.Blockers, fmt.Sprintf("the workspace has uncommitted or untracked files (%s); only commits are merged: commit or remove them first",
			nameList(pf.Uncommitted)))
	}
	if len(pf.Conflicts) > 0 {
		msg := fmt.Sprintf("merging %s into %s conflicts in %s", branch, target, nameList(pf.Conflicts))
		if at != "" {
			msg = fmt.Sprintf("replaying commit %s onto %s conflicts in %s", at, target, nameList(pf.Conflicts))
		}
		pf.Blockers = append(pf.Blockers, msg+"; update the workspace from its base (or resolve the conflicts in it) first")
	}
	if drops != "" {
		pf.Blockers = append(pf.Blockers, drops)
	}
	if len(pf.TargetDirty) > 0 {
		pf.Blockers = append(pf.Blockers, fmt.Sprintf("%s is checked out at %s with changed files (%s); the branch is not moved under them: commit or stash them there first",
			target, pf.CheckedOutAt, nameList(pf.TargetDirty)))
	}
	pf.CanMerge = len(pf.Blockers) == 0
	pl.pf = pf
	return pl, nil
}

// trialRebase replays the commits of head onto targetHead in memory and
// fills in the files that conflicts in; when it replays cleanly, drops is
// the blocker of a replay that would leave out changes made in merge
// commits (see rebaseDrops), "" when it keeps everything.
func (m *Manager) trialRebase(ctx context.Context, dir, targetHead, head, branch string, pf *Preflight) (at, drops string, err error) {
	r, err := m.replay(ctx, dir, targetHead, targetHead, head, syntheticIdent)
	if err != nil || r.conflicts != nil {
		pf.Conflicts = r.conflicts
		return r.at, "", err
	}
	differ, conflicts, err := m.rebaseDrops(ctx, dir, targetHead, head, r.tip)
	if err != nil || differ == nil && conflicts == nil {
		return "", "", err
	}
	return "", dropsMessage(branch, "merge or squash", differ, conflicts), nil
}

// targetCheckout fills in where the preflight's target is checked out
// and which of its tracked files are changed there. Untracked files there
// do not count: the fast-forward of that checkout (git merge --ff-only)
// refuses to overwrite one, and Merge checks for those before it moves
// anything (see untrackedInTheWay).
func (m *Manager) targetCheckout(ctx context.Context, p *project, pf *Preflight) error {
	if at, msg := m.busyMessage(p, pf.Target); msg != "" {
		pf.CheckedOutAt = at
		pf.Blockers = append(pf.Blockers, msg)
		return nil
	}
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return classify(err, CodeInternal, "cannot list the worktrees of %s", p.Path)
	}
	for _, e := range entries {
		if e.Branch != pf.Target || e.Bare {
			continue
		}
		pf.CheckedOutAt = e.Path
		if _, err := os.Lstat(e.Path); err != nil {
			pf.Blockers = append(pf.Blockers, fmt.Sprintf("%s is checked out at %s, a folder that is gone; run git worktree prune in %s first",
				pf.Target, e.Path, p.Path))
			return nil
		}
		if pf.TargetDirty, err = m.trackedChanges(ctx, e.Path); err != nil {
			return classify(err, CodeInternal, "cannot read the status of %s", e.Path)
		}
		return nil
	}
	return nil
}

// trackedChanges names the tracked files with staged or unstaged changes
// in the worktree at dir.
func (m *Manager) trackedChanges(ctx context.Context, dir string) ([]string, error) {
	out, err := m.git.runEnv(ctx, dir, []string{"GIT_OPTIONAL_LOCKS=0"}, "status", "--porcelain=v1", "-z", "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	return parsePorcelainZ(out).Changed, nil
}

// nameList is names for a message: the first ten, and how many more.
func nameList(names []string) string {
	const shown = 10
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// localBranchOf is the local branch a merge into base lands in: base
// itself when it is a local branch; for a remote-tracking base (a clone's
// origin/main, its workspaces' default base) the local branch of the
// same name, which the user pushes from. CodeHydra merges into local
// branches only: with no such branch it says how to make one.
func (m *Manager) localBranchOf(ctx context.Context, p *project, base string) (string, error) {
	if head, err := m.commitOf(ctx, p.Path, "refs/heads/"+base); err != nil || head != "" {
		return base, err
	}
	remote, name, ok := strings.Cut(base, "/")
	if !ok || name == "" {
		return base, nil
	}
	if head, err := m.commitOf(ctx, p.Path, "refs/remotes/"+base); err != nil || head == "" {
		return base, err
	}
	if head, err := m.commitOf(ctx, p.Path, "refs/heads/"+name); err != nil || head != "" {
		return name, err
	}
	return "", Errorf(CodeInvalidInput, "the workspace's base %s is a branch of the remote %s, and CodeHydra merges into local branches only; make its local branch (git branch --track %s %s) or name a target", base, remote, name, base)
}
