package workspace

import (
	"context"
	"fmt"
	"strings"
)

// maxMessageBytes bounds the message of a merge or squash commit.
const maxMessageBytes = 64 << 10

// Merge lands the workspace at wsPath in its target branch (o.Target, ""
// for its base) with o.Strategy, once its preflight finds nothing in the
// way; else it refuses with CodeConflict and the preflight's reasons. It
// makes the new commits with git's plumbing, touching no working tree:
//
//   - merge: a fast-forward when the target is an ancestor of the head,
//     else a merge commit of the two (the target first);
//   - squash: one commit on the target with the merged tree;
//   - rebase: the workspace's commits replayed onto the target (see
//     replay), then the target fast-forwarded to them.
//
// Then it moves the refs (see moveRefs), a rebase the workspace's branch
// first: where the target is checked out (the main checkout, another
// workspace) that checkout moves with it, and never while it has changed
// files, nor over untracked or ignored files in the way (see
// checkoutsInTheWay). Before a rebase moves the workspace's branch, its
// old head is kept under refs/codehydra/rebased/<branch>/<UTC time>. Last
// it checks that the target holds all of the workspace's work: its head
// (for a rebase, the replayed one) is an ancestor of the target, and for
// a squash or a rebase, merging the (original) head into the target
// changes nothing; only then is Verified set. The commits carry the user's
// configured git identity; without one nothing is made (CodeInvalidInput).
//
// The workspace and the target branch are reserved while it runs, so a
// delete, an update or another merge of either is a CodeConflict. It
// publishes status-changed for the workspaces whose branch moved.
func (m *Manager) Merge(ctx context.Context, wsPath string, o MergeOptions) (MergeResult, error) {
	if len(o.Message) > maxMessageBytes || strings.ContainsRune(o.Message, 0) {
		return MergeResult{}, Errorf(CodeInvalidInput, "the message must be text of at most %d bytes", maxMessageBytes)
	}
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return MergeResult{}, err
	}
	release, err := m.reserve("merge", pathKey(ws.Path))
	if err != nil {
		return MergeResult{}, err
	}
	defer release()
	pl, err := m.preflight(ctx, ws, p, o)
	if err != nil {
		return MergeResult{}, err
	}
	// The branches too: a merge into the workspace's branch, or an update
	// of the workspace that has the target, would move the same refs.
	releaseTarget, err := m.reserve("merge", branchKey(p.Path, pl.pf.Target), branchKey(p.Path, pl.pf.Branch))
	if err != nil {
		return MergeResult{}, err
	}
	defer releaseTarget()
	res := MergeResult{Preflight: pl.pf, TargetHead: pl.pf.TargetHead}
	if !pl.pf.CanMerge {
		return res, Errorf(CodeConflict, "cannot merge %s into %s: %s", pl.pf.Branch, pl.pf.Target, strings.Join(pl.pf.Blockers, "; "))
	}
	moves, err := m.mergeCommits(ctx, pl, o.Message)
	if err != nil {
		return res, err
	}
	if err := m.checkoutsInTheWay(ctx, p, moves); err != nil {
		return res, err
	}
	kept := ""
	if len(moves) == 2 {
		why := fmt.Sprintf("branch %s before its rebase onto %s", pl.pf.Branch, pl.pf.Target)
		if kept, err = m.keepCommit(ctx, p, "rebased", pl.pf.Branch, pl.pf.Head, why); err != nil {
			return res, err
		}
	}
	if err := m.moveRefs(ctx, p, ws.Path, moves); err != nil {
		return res, m.movedWhat(ctx, pl, moves, err)
	}
	m.publishLanded(p, ws.Path, moves)
	if res.TargetHead, err = m.commitOf(ctx, p.Path, "refs/heads/"+pl.pf.Target); err != nil {
		return res, classify(err, CodeInternal, "cannot read branch %s after the merge", pl.pf.Target)
	}
	res.Merged = res.TargetHead != pl.pf.TargetHead
	if res.Verified, err = m.verifyLanded(ctx, pl, moves, res.TargetHead); err != nil {
		return res, classify(err, CodeInternal, "cannot check that %s holds the work of %s", pl.pf.Target, pl.pf.Branch)
	}
	res.Head = landedHead(pl, moves)
	m.log.Info("merged a workspace", "workspace", ws.Path, "branch", pl.pf.Branch, "target", pl.pf.Target,
		"strategy", string(pl.pf.Strategy), "from", short(pl.pf.TargetHead), "to", short(res.TargetHead), "verified", res.Verified, "oldHeadKeptAt", kept)
	return res, nil
}

// mergeCommits makes the commits of pl's merge and returns the ref moves
// that land them; none when the target has all of the work already.
func (m *Manager) mergeCommits(ctx context.Context, pl *plan, message string) ([]refMove, error) {
	pf, dir := pl.pf, pl.p.Path
	targetRef, branchRef := "refs/heads/"+pf.Target, "refs/heads/"+pf.Branch
	ff, err := m.isAncestor(ctx, dir, pf.TargetHead, pf.Head)
	if err != nil {
		return nil, classify(err, CodeInternal, "cannot compare %s with %s", pf.Target, pf.Branch)
	}
	switch {
	case pf.Ahead == 0 && pf.Strategy != StrategySquash:
		return nil, nil
	case ff && pf.Strategy != StrategySquash:
		return []refMove{{Ref: targetRef, Old: pf.TargetHead, New: pf.Head}}, nil
	}
	if err := m.checkIdentity(ctx, dir); err != nil {
		return nil, err
	}
	switch pf.Strategy {
	case StrategyRebase:
		r, err := m.replay(ctx, dir, pf.TargetHead, pf.TargetHead, pf.Head, nil)
		if err != nil {
			return nil, classify(err, CodeInternal, "cannot replay the commits of %s onto %s", pf.Branch, pf.Target)
		}
		if r.conflicts != nil {
			return nil, Errorf(CodeConflict, "replaying commit %s onto %s conflicts in %s; nothing was changed", r.at, pf.Target, nameList(r.conflicts))
		}
		return []refMove{
			{Ref: branchRef, Old: pf.Head, New: r.tip},
			{Ref: targetRef, Old: pf.TargetHead, New: r.tip},
		}, nil
	case StrategySquash:
		targetTree, err := m.treeOf(ctx, dir, pf.TargetHead)
		if err != nil {
			return nil, classify(err, CodeInternal, "cannot read branch %s", pf.Target)
		}
		if pl.tree == targetTree {
			return nil, nil
		}
		if message == "" {
			if message, err = m.squashMessage(ctx, dir, pf); err != nil {
				return nil, err
			}
		}
		c, err := m.commitTree(ctx, dir, nil, pl.tree, []string{pf.TargetHead}, withNewline(message))
		if err != nil {
			return nil, classify(err, CodeInternal, "cannot make the squash commit")
		}
		return []refMove{{Ref: targetRef, Old: pf.TargetHead, New: c}}, nil
	default:
		if message == "" {
			message = fmt.Sprintf("Merge branch '%s' into %s", pf.Branch, pf.Target)
		}
		c, err := m.commitTree(ctx, dir, nil, pl.tree, []string{pf.TargetHead, pf.Head}, withNewline(message))
		if err != nil {
			return nil, classify(err, CodeInternal, "cannot make the merge commit")
		}
		return []refMove{{Ref: targetRef, Old: pf.TargetHead, New: c}}, nil
	}
}

// squashMessage is the message of a squash commit: the branch, then the
// subjects of its commits, oldest first.
func (m *Manager) squashMessage(ctx context.Context, dir string, pf Preflight) (string, error) {
	out, err := m.git.run(ctx, dir, "log", "--reverse", "--no-merges", "--format=* %s", pf.TargetHead+".."+pf.Head)
	if err != nil {
		return "", classify(err, CodeInternal, "cannot list the commits of %s", pf.Branch)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 50 {
		lines = append(lines[:50], fmt.Sprintf("* … and %d more", len(lines)-50))
	}
	return fmt.Sprintf("Squashed branch '%s' into %s\n\n%s", pf.Branch, pf.Target, strings.Join(lines, "\n")), nil
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// movedWhat adds to the failure err of a merge's moves what had moved
// before it: a rebase may have moved the workspace's branch already.
func (m *Manager) movedWhat(ctx context.Context, pl *plan, moves []refMove, err error) error {
	if len(moves) < 2 {
		return err
	}
	if now, rerr := m.commitOf(ctx, pl.p.Path, moves[0].Ref); rerr == nil && now == moves[0].New {
		return &Error{Code: CodeOf(err), Err: err, Message: fmt.Sprintf(
			"the workspace's branch %s was rebased onto %s, but %s was not moved; merge again to finish", pl.pf.Branch, pl.pf.Target, pl.pf.Target)}
	}
	return err
}

// verifyLanded checks that the target, now at targetHead, holds all of
// the workspace's work: the head it merged, which must still be the
// workspace's (an agent may have committed since the preflight). For a
// rebase, that is the replayed head, and merging the original head into
// the target must change nothing too: a replay leaves merge commits out.
func (m *Manager) verifyLanded(ctx context.Context, pl *plan, moves []refMove, targetHead string) (bool, error) {
	dir, head := pl.p.Path, pl.pf.Head
	if pl.pf.Strategy == StrategyRebase && len(moves) == 2 {
		head = moves[0].New
	}
	if now, err := m.commitOf(ctx, dir, "refs/heads/"+pl.pf.Branch); err != nil || now != head {
		return false, err
	}
	switch pl.pf.Strategy {
	case StrategySquash:
		return m.mergeChangesNothing(ctx, dir, targetHead, head)
	case StrategyRebase:
		if ok, err := m.mergeChangesNothing(ctx, dir, targetHead, pl.pf.Head); err != nil || !ok {
			return false, err
		}
	}
	return m.isAncestor(ctx, dir, head, targetHead)
}

// mergeChangesNothing reports whether merging commit head into commit
// target gives target's tree.
func (m *Manager) mergeChangesNothing(ctx context.Context, dir, target, head string) (bool, error) {
	tree, conflicts, err := m.mergeTrees(ctx, dir, target, head)
	if err != nil || conflicts != nil {
		return false, err
	}
	targetTree, err := m.treeOf(ctx, dir, target)
	return err == nil && tree == targetTree, err
}
