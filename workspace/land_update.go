package workspace

import (
	"context"
	"fmt"
)

// UpdateFromBase brings the workspace at wsPath up to date with its base:
// mode UpdateRebase replays its commits onto the base (see replay),
// UpdateMerge merges the base in (a fast-forward when the workspace has no
// commit of its own, else a merge commit, the workspace's head first). The
// commits are made with git's plumbing, touching no working tree; only
// then does the workspace's branch move, in its own worktree (git reset
// --keep or merge --ff-only, recorded as Merge's moves are). A workspace
// with uncommitted or untracked files is refused (CodeConflict, naming
// them); so is an update that conflicts, naming the files, one whose move
// would overwrite untracked or ignored files (see inTheWay), and a rebase
// that would drop changes made in the workspace's merge commits (see
// rebaseDrops): then nothing has changed. Before a rebase moves the
// branch, its old head is kept under refs/codehydra/rebased/<branch>/<UTC
// time>. A workspace that has all of its base already is
// left as it is (Updated false). It refuses a detached HEAD and a base
// that names no commit (CodeInvalidInput), and is a CodeConflict while a
// delete, a merge or another update of the workspace runs.
func (m *Manager) UpdateFromBase(ctx context.Context, wsPath string, mode UpdateMode) (UpdateResult, error) {
	if mode != UpdateRebase && mode != UpdateMerge {
		return UpdateResult{}, Errorf(CodeInvalidInput, "unknown mode %q; use rebase or merge", mode)
	}
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return UpdateResult{}, err
	}
	release, err := m.reserve("update", pathKey(ws.Path))
	if err != nil {
		return UpdateResult{}, err
	}
	defer release()
	branch, head, err := m.landBranch(ctx, ws)
	if err != nil {
		return UpdateResult{}, err
	}
	releaseBranch, err := m.reserve("update", branchKey(p.Path, branch))
	if err != nil {
		return UpdateResult{}, err
	}
	defer releaseBranch()
	base := m.baseOf(ctx, p, branch)
	if err := validateBase(base); err != nil {
		return UpdateResult{}, Errorf(CodeInvalidInput, "the workspace has no base to update from (%v); set its metadata key base", err)
	}
	res := UpdateResult{Base: base, Mode: mode, OldHead: head, NewHead: head}
	baseHead, err := m.commitOf(ctx, p.Path, base)
	if err != nil || baseHead == "" {
		return res, classify(err, CodeInvalidInput, "the base %s names no commit", base)
	}
	if dirty, err := m.uncommitted(ctx, ws); err != nil || len(dirty) > 0 {
		if err != nil {
			return res, err
		}
		return res, Errorf(CodeConflict, "the workspace has uncommitted or untracked files (%s); commit or remove them first, then update it; nothing was changed", nameList(dirty))
	}
	has, err := m.isAncestor(ctx, p.Path, baseHead, head)
	if err != nil {
		return res, classify(err, CodeInternal, "cannot compare %s with %s", base, branch)
	}
	if has {
		return res, nil
	}
	if res.NewHead, err = m.updateCommits(ctx, p, branch, head, base, baseHead, mode); err != nil {
		res.NewHead = head
		return res, err
	}
	moves := []refMove{{Ref: "refs/heads/" + branch, Old: head, New: res.NewHead}}
	if err := m.checkoutsInTheWay(ctx, p, moves); err != nil {
		res.NewHead = head
		return res, err
	}
	kept := ""
	if mode == UpdateRebase {
		if kept, err = m.keepCommit(ctx, p, "rebased", branch, head, fmt.Sprintf("branch %s before its rebase onto %s", branch, base)); err != nil {
			res.NewHead = head
			return res, err
		}
	}
	if err := m.moveRefs(ctx, p, ws.Path, moves); err != nil {
		res.NewHead = head
		return res, err
	}
	m.publishLanded(p, ws.Path, moves)
	res.Updated = true
	m.log.Info("updated a workspace from its base", "workspace", ws.Path, "base", base, "mode", string(mode),
		"from", short(head), "to", short(res.NewHead), "oldHeadKeptAt", kept)
	return res, nil
}

// updateCommits makes the commits of an update and returns the new head.
func (m *Manager) updateCommits(ctx context.Context, p *project, branch, head, base, baseHead string, mode UpdateMode) (string, error) {
	dir := p.Path
	if mode == UpdateMerge {
		if ff, err := m.isAncestor(ctx, dir, head, baseHead); err != nil || ff {
			return baseHead, classify(err, CodeInternal, "cannot compare %s with %s", branch, base)
		}
	}
	if err := m.checkIdentity(ctx, dir); err != nil {
		return "", err
	}
	if mode == UpdateRebase {
		r, err := m.replay(ctx, dir, baseHead, baseHead, head, nil)
		if err != nil {
			return "", classify(err, CodeInternal, "cannot replay the commits of %s onto %s", branch, base)
		}
		if r.conflicts != nil {
			return "", Errorf(CodeConflict, "replaying commit %s onto %s conflicts in %s; the workspace is left as it was", r.at, base, nameList(r.conflicts))
		}
		differ, conflicts, err := m.rebaseDrops(ctx, dir, baseHead, head, r.tip)
		if err != nil {
			return "", classify(err, CodeInternal, "cannot merge %s into %s in memory", branch, base)
		}
		if differ != nil || conflicts != nil {
			return "", Errorf(CodeConflict, "%s; the workspace is left as it was", dropsMessage(branch, "update it with mode merge", differ, conflicts))
		}
		return r.tip, nil
	}
	tree, conflicts, err := m.mergeTrees(ctx, dir, head, baseHead)
	if err != nil {
		return "", classify(err, CodeInternal, "cannot merge %s into %s in memory", base, branch)
	}
	if conflicts != nil {
		return "", Errorf(CodeConflict, "merging %s into %s conflicts in %s; the workspace is left as it was", base, branch, nameList(conflicts))
	}
	c, err := m.commitTree(ctx, dir, nil, tree, []string{head, baseHead}, fmt.Sprintf("Merge branch '%s' into %s\n", base, branch))
	if err != nil {
		return "", classify(err, CodeInternal, "cannot make the merge commit")
	}
	return c, nil
}
