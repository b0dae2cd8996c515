package workspace

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A merge or an update makes its commits first (objects only: a kill then
// leaves the old state) and then moves one or two refs. So that a kill
// between those moves cannot leave half of them done for good, it records
// the moves — each ref's old and new value — in the project's git folder
// before the first, and removes the record after the last. Load finishes
// the moves of the records it finds (see finishPendingLands).
//
// A move of a branch that a worktree has checked out updates that
// worktree's files too (git merge --ff-only or git reset --keep), one file
// after another: a kill in the middle of that one git command leaves the
// checkout part way, its ref not yet moved, which the next launch finds
// changed and leaves alone (logged). Nothing is lost then either: the
// files are the old or the new commit's, and both commits are kept.

// landJournal is the record of the ref moves of a merge or an update in
// progress.
type landJournal struct {
	// Workspace is the workspace merged or updated.
	Workspace string    `json:"workspace"`
	Moves     []refMove `json:"moves"`
}

// refMove moves branch Ref (refs/heads/…) from commit Old to commit New.
type refMove struct {
	Ref string `json:"ref"`
	Old string `json:"old"`
	New string `json:"new"`
}

// landDir is the folder of the records, under the git common dir.
const landDir = "codehydra-pending-lands"

func writeLandJournal(commonDir string, j landJournal) error {
	return writeRecord(commonDir, landDir, j.Workspace, j)
}

func removeLandJournal(commonDir, wsPath string) error {
	return removeRecord(commonDir, landDir, wsPath)
}

// readLandJournals returns the records of merges and updates in progress
// in the project; unreadable ones are removed: a record is written whole
// before the first ref moves.
func readLandJournals(commonDir string) ([]landJournal, error) {
	return readRecords(commonDir, landDir, func(j landJournal) string { return j.Workspace },
		func(j landJournal) bool { return validMoves(j.Moves) })
}

// validMoves checks moves read back from a record before they reach git.
func validMoves(moves []refMove) bool {
	for _, mv := range moves {
		if !strings.HasPrefix(mv.Ref, "refs/heads/") || validateBase(mv.Ref) != nil || !isObjectID(mv.Old) || !isObjectID(mv.New) {
			return false
		}
	}
	return len(moves) > 0
}

func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// moveRefs records moves, makes them in order, and removes the record.
// A move that fails stops the rest; the record goes too, as the caller
// reports the failure (and what was moved) to the user.
func (m *Manager) moveRefs(ctx context.Context, p *project, wsPath string, moves []refMove) error {
	moves = slices.DeleteFunc(slices.Clone(moves), func(mv refMove) bool { return mv.Old == mv.New })
	if len(moves) == 0 {
		return nil
	}
	// Once the first ref moves, the rest follow: a caller that gives up
	// (a tool call's timeout) must not leave half of them moved.
	ctx = context.WithoutCancel(ctx)
	if err := writeLandJournal(p.commonDir, landJournal{Workspace: wsPath, Moves: moves}); err != nil {
		return Errorf(CodeInternal, "cannot record the merge in %s before moving any branch: %v", p.commonDir, err)
	}
	var err error
	for _, mv := range moves {
		if err = m.moveRef(ctx, p, mv); err != nil {
			break
		}
	}
	if rerr := removeLandJournal(p.commonDir, wsPath); rerr != nil {
		m.log.Warn("cannot remove a merge record", "path", wsPath, "err", rerr)
	}
	return err
}

// moveRef moves mv.Ref from mv.Old to mv.New. Where a worktree has the
// branch checked out, it moves there, with that worktree's files, and
// only when none of its tracked files is changed and no untracked or
// ignored file is in the way (see inTheWay): git merge --ff-only for a
// fast-forward, else git reset --keep. A branch that a worktree is
// rebasing or bisecting is not moved. Elsewhere git update-ref moves it
// only if it is still at mv.Old.
func (m *Manager) moveRef(ctx context.Context, p *project, mv refMove) error {
	branch := strings.TrimPrefix(mv.Ref, "refs/heads/")
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return classify(err, CodeInternal, "cannot list the worktrees of %s", p.Path)
	}
	var wt *worktreeEntry
	for i, e := range entries {
		if e.Branch == branch && !e.Bare {
			wt = &entries[i]
			break
		}
	}
	if wt == nil {
		if _, msg := m.busyMessage(p, branch); msg != "" {
			return Errorf(CodeConflict, "%s; the branch is not moved under it", msg)
		}
		if _, err := m.git.run(ctx, p.Path, "update-ref", "-m", "codehydra: merge", mv.Ref, mv.New, mv.Old); err != nil {
			return classify(err, CodeConflict, "cannot move branch %s to %s (it moved meanwhile?)", branch, short(mv.New))
		}
		return nil
	}
	// What the worktree has checked out, where it is and whether it is
	// clean are read again right before the move: a user may have
	// changed any of them since the preflight.
	cur, err := m.commitOf(ctx, wt.Path, "HEAD")
	if err != nil {
		return classify(err, CodeInternal, "cannot read the head of %s", wt.Path)
	}
	if cur != mv.Old {
		return Errorf(CodeConflict, "branch %s moved to %s while the merge ran (it was at %s); nothing more was moved", branch, short(cur), short(mv.Old))
	}
	if dirty, err := m.trackedChanges(ctx, wt.Path); err != nil || len(dirty) > 0 {
		if err != nil {
			return classify(err, CodeInternal, "cannot read the status of %s", wt.Path)
		}
		return Errorf(CodeConflict, "%s is checked out at %s with changed files (%s); the branch is not moved under them", branch, wt.Path, nameList(dirty))
	}
	if found, err := m.inTheWay(ctx, p.Path, wt.Path, mv.Old, mv.New); err != nil || len(found) > 0 {
		if err != nil {
			return classify(err, CodeInternal, "cannot list what moving %s adds", branch)
		}
		return Errorf(CodeConflict, "%s is checked out at %s with untracked or ignored files that moving it would overwrite (%s); the branch is not moved",
			branch, wt.Path, nameList(found))
	}
	ff, err := m.isAncestor(ctx, p.Path, mv.Old, mv.New)
	if err != nil {
		return classify(err, CodeInternal, "cannot compare %s with %s", short(mv.Old), short(mv.New))
	}
	args := []string{"reset", "-q", "--keep", mv.New}
	if ff {
		args = []string{"merge", "-q", "--ff-only", "--no-stat", "--no-edit", mv.New}
	}
	if _, err := m.git.run(ctx, wt.Path, args...); err != nil {
		return classify(err, CodeConflict, "cannot move %s in its checkout at %s", branch, wt.Path)
	}
	// The head was read before the move: a commit made in that checkout
	// since (an agent at work) is left behind by git reset --keep. It is
	// not put back on the branch, which would move the checkout once more
	// under whoever committed: it is kept under a ref, and named.
	prev, err := m.commitOf(ctx, wt.Path, "ORIG_HEAD")
	if err != nil {
		return classify(err, CodeInternal, "cannot read what %s was at before the move in %s", branch, wt.Path)
	}
	if prev != mv.Old {
		kept, kerr := m.keepCommit(ctx, p, "overtaken", branch, prev, "commit made on "+branch+" while CodeHydra moved it")
		if kerr != nil {
			return &Error{Code: CodeInternal, Err: kerr, Message: fmt.Sprintf(
				"commit %s was made on %s at %s while the branch was moved to %s, which left it out; keep it now (git branch <name> %s)",
				prev, branch, wt.Path, short(mv.New), prev)}
		}
		return Errorf(CodeConflict, "commit %s was made on %s at %s while the branch was moved to %s, which left it out; it is kept under %s: cherry-pick or merge it back",
			prev, branch, wt.Path, short(mv.New), kept)
	}
	now, err := m.commitOf(ctx, p.Path, mv.Ref)
	if err != nil || now != mv.New {
		return Errorf(CodeInternal, "branch %s is at %s after moving it to %s in %s", branch, short(now), short(mv.New), wt.Path)
	}
	return nil
}

// short is a commit's ID as a message shows it.
func short(id string) string { return id[:min(len(id), 12)] }

// finishPendingLands finishes the ref moves that an earlier run of the
// app recorded and did not finish (it was killed between them). A move
// whose ref is at its new value is done; one at its old value is made,
// as moveRef makes it; one elsewhere was moved by someone since, and is
// left. If any move of a record cannot be made (its checkout has changed
// files now, its ref is elsewhere), none of its remaining moves is made,
// so that a merge is finished whole or left as it was; that is logged.
// The record is removed in every case: a merge is tried once more at
// most, never behind the user's back at every launch.
func (m *Manager) finishPendingLands(ctx context.Context) error {
	for _, p := range m.projectList() {
		recs, err := readLandJournals(p.commonDir)
		if err != nil {
			m.log.Warn("cannot read the merges in progress", "project", p.Path, "err", err)
			continue
		}
		for _, j := range recs {
			if err := m.finishLand(ctx, p, j); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				m.log.Warn("cannot finish a merge that an earlier run left unfinished; it is left as it is",
					"workspace", j.Workspace, "err", err)
			} else {
				m.log.Info("finished a merge that an earlier run left unfinished", "workspace", j.Workspace)
			}
			if err := removeLandJournal(p.commonDir, j.Workspace); err != nil {
				m.log.Warn("cannot remove a merge record", "workspace", j.Workspace, "err", err)
			}
		}
	}
	return nil
}

// finishLand makes the moves of j that are not made yet, or none.
func (m *Manager) finishLand(ctx context.Context, p *project, j landJournal) error {
	var todo []refMove
	for _, mv := range j.Moves {
		cur, err := m.commitOf(ctx, p.Path, mv.Ref)
		if err != nil {
			return fmt.Errorf("read %s: %w", mv.Ref, err)
		}
		switch cur {
		case mv.New:
		case mv.Old:
			if err := m.canMove(ctx, p, mv); err != nil {
				return err
			}
			todo = append(todo, mv)
		default:
			return fmt.Errorf("%s is at %s, neither the old %s nor the new %s; it moved since", mv.Ref, short(cur), short(mv.Old), short(mv.New))
		}
	}
	for _, mv := range todo {
		if err := m.moveRef(ctx, p, mv); err != nil {
			return err
		}
	}
	m.publishLanded(p, j.Workspace, j.Moves)
	return nil
}

// canMove says why moveRef would refuse mv now: its checkout has changed
// files, or untracked or ignored files in the way, or a worktree is
// rebasing or bisecting the branch.
func (m *Manager) canMove(ctx context.Context, p *project, mv refMove) error {
	if _, msg := m.busyMessage(p, strings.TrimPrefix(mv.Ref, "refs/heads/")); msg != "" {
		return errors.New(msg)
	}
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Branch != strings.TrimPrefix(mv.Ref, "refs/heads/") || e.Bare {
			continue
		}
		dirty, err := m.trackedChanges(ctx, e.Path)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			return fmt.Errorf("%s is checked out at %s with changed files (%s)", mv.Ref, e.Path, nameList(dirty))
		}
		found, err := m.inTheWay(ctx, p.Path, e.Path, mv.Old, mv.New)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			return fmt.Errorf("%s is checked out at %s with untracked or ignored files that moving it would overwrite (%s)", mv.Ref, e.Path, nameList(found))
		}
	}
	return nil
}

// publishLanded tells subscribers of the workspaces whose branch moves
// touched: the one merged or updated, and those with a moved branch
// checked out.
func (m *Manager) publishLanded(p *project, wsPath string, moves []refMove) {
	m.mu.Lock()
	var touched []Workspace
	for _, ws := range p.workspaces {
		hit := pathKey(ws.Path) == pathKey(wsPath)
		for _, mv := range moves {
			hit = hit || ws.Branch != "" && "refs/heads/"+ws.Branch == mv.Ref
		}
		if hit {
			touched = append(touched, ws)
		}
	}
	m.mu.Unlock()
	for _, ws := range touched {
		m.Publish(Event{Kind: EventStatusChanged, ProjectPath: p.Path, Workspace: ws})
	}
}
