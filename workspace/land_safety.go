package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The checks that keep a merge or an update from losing anything: the
// changes a rebase would leave out with a workspace's merge commits, the
// untracked and ignored files a checkout's move would overwrite, the
// branches a worktree is rebasing or bisecting, and the old head of a
// branch that a rebase moves.

// rebaseDrops compares the tip of a replay of head onto onto with a plain
// merge of head into onto: a replay leaves merge commits out, and with
// them any change made in one (a conflict resolved, an edit made during
// `git merge --no-commit`). It returns the files whose content differs,
// or, when the plain merge conflicts, the files it conflicts in: then it
// cannot be told that the replay keeps everything.
func (m *Manager) rebaseDrops(ctx context.Context, dir, onto, head, tip string) (differ, conflicts []string, err error) {
	merged, conflicts, err := m.mergeTrees(ctx, dir, onto, head)
	if err != nil || conflicts != nil {
		return nil, conflicts, err
	}
	tipTree, err := m.treeOf(ctx, dir, tip)
	if err != nil || tipTree == merged {
		return nil, nil, err
	}
	out, err := m.git.run(ctx, dir, "diff-tree", "-r", "--no-renames", "--name-only", "-z", merged, tipTree)
	if err != nil {
		return nil, nil, err
	}
	differ = splitZ(out)
	if len(differ) == 0 {
		differ = []string{"(git named no file)"}
	}
	return differ, nil, nil
}

// dropsMessage is the refusal of a rebase that would leave out changes;
// instead says what to do.
func dropsMessage(branch, instead string, differ, conflicts []string) string {
	if conflicts != nil {
		return fmt.Sprintf("a rebase of %s cannot be checked to keep all of its changes, as merging it conflicts in %s; resolve them in the workspace first",
			branch, nameList(conflicts))
	}
	return fmt.Sprintf("a rebase would drop changes made in merge commits of %s (%s); %s instead", branch, nameList(differ), instead)
}

func splitZ(out string) []string {
	var names []string
	for f := range strings.SplitSeq(strings.TrimSuffix(out, "\x00"), "\x00") {
		if f != "" {
			names = append(names, f)
		}
	}
	return names
}

// inTheWay names what a checkout at wtPath, clean and at commit old, has
// where commit new adds a file: an untracked or an ignored file, or a
// file where new needs a folder. git merge --ff-only and git reset --keep
// refuse to overwrite an untracked file, but overwrite an ignored one (a
// local .env with its secrets) without a word.
func (m *Manager) inTheWay(ctx context.Context, dir, wtPath, old, new string) ([]string, error) {
	out, err := m.git.run(ctx, dir, "diff", "--no-renames", "--name-only", "-z", "--diff-filter=A", old, new)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, f := range splitZ(out) {
		if _, err := os.Lstat(filepath.Join(wtPath, filepath.FromSlash(f))); err == nil {
			found = append(found, f)
			continue
		}
		for d := filepath.Dir(filepath.FromSlash(f)); d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
			if fi, err := os.Lstat(filepath.Join(wtPath, d)); err == nil && !fi.IsDir() {
				found = append(found, filepath.ToSlash(d))
				break
			}
		}
	}
	return found, nil
}

// checkoutsInTheWay refuses moves, before any is made, when a worktree
// that has one of their branches checked out has untracked or ignored
// files where the move adds files (see inTheWay).
func (m *Manager) checkoutsInTheWay(ctx context.Context, p *project, moves []refMove) error {
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return classify(err, CodeInternal, "cannot list the worktrees of %s", p.Path)
	}
	for _, mv := range moves {
		for _, e := range entries {
			if e.Bare || "refs/heads/"+e.Branch != mv.Ref {
				continue
			}
			found, err := m.inTheWay(ctx, p.Path, e.Path, mv.Old, mv.New)
			if err != nil {
				return classify(err, CodeInternal, "cannot list what moving %s adds", e.Branch)
			}
			if len(found) > 0 {
				return Errorf(CodeConflict, "%s is checked out at %s with untracked or ignored files that moving it would overwrite (%s); move them away first; nothing was changed",
					e.Branch, e.Path, nameList(found))
			}
		}
	}
	return nil
}

// inProgress maps the branches that a worktree is rebasing or bisecting
// to that worktree's folder and what it does there. git worktree list
// shows such a worktree as detached, yet the branch is the user's: the
// rebase or the bisect moves it back when it ends.
func (m *Manager) inProgress(p *project) map[string][2]string {
	busy := map[string][2]string{}
	look := func(gitDir, wtPath string) {
		for _, f := range []struct{ file, what string }{
			{"rebase-merge/head-name", "rebased"}, {"rebase-apply/head-name", "rebased"}, {"BISECT_START", "bisected"},
		} {
			b, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(f.file)))
			if err != nil {
				continue
			}
			if name := strings.TrimPrefix(strings.TrimSpace(string(b)), "refs/heads/"); name != "" {
				busy[name] = [2]string{wtPath, f.what}
			}
		}
	}
	look(p.commonDir, p.Path)
	dirs, err := os.ReadDir(filepath.Join(p.commonDir, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn("cannot list the worktrees' git folders", "project", p.Path, "err", err)
	}
	for _, d := range dirs {
		gitDir := filepath.Join(p.commonDir, "worktrees", d.Name())
		b, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
		if err != nil {
			continue
		}
		look(gitDir, filepath.Dir(filepath.Clean(strings.TrimSpace(string(b)))))
	}
	return busy
}

// busyMessage is the refusal to move a branch a worktree is rebasing or
// bisecting, "" when none is.
func (m *Manager) busyMessage(p *project, branch string) (string, string) {
	b, ok := m.inProgress(p)[branch]
	if !ok {
		return "", ""
	}
	return b[0], fmt.Sprintf("%s is being %s at %s; finish or abort it first", branch, b[1], b[0])
}

// exactBranch refuses a target that does not name a local branch exactly
// as git lists it: on a case-insensitive file system "Main" finds the
// loose ref of main, yet no worktree has "Main" checked out, so main
// would move under its checkout; a symbolic ref moves the branch it
// points to, under that branch's checkout, in the same way.
func (m *Manager) exactBranch(ctx context.Context, p *project, target string) error {
	out, err := m.git.run(ctx, p.Path, "for-each-ref", "--format=%(refname)%00%(symref)", "refs/heads/")
	if err != nil {
		return classify(err, CodeInternal, "cannot list the branches of %s", p.Path)
	}
	var alike []string
	for line := range strings.SplitSeq(out, "\n") {
		ref, symref, _ := strings.Cut(line, "\x00")
		name := strings.TrimPrefix(ref, "refs/heads/")
		switch {
		case name == target && symref != "":
			return Errorf(CodeInvalidInput, "%s is a symbolic ref to %s; name that branch instead", target, strings.TrimPrefix(symref, "refs/heads/"))
		case name == target:
			return nil
		case strings.EqualFold(name, target):
			alike = append(alike, name)
		}
	}
	if len(alike) > 0 {
		return Errorf(CodeInvalidInput, "there is no local branch %s (branch names are matched exactly); did you mean %s?", target, strings.Join(alike, " or "))
	}
	return Errorf(CodeInvalidInput, "there is no local branch %s to merge into; name an existing branch of %s", target, p.Path)
}

// keepCommit keeps commit reachable under refs/codehydra/<kind>/<branch>/
// <UTC time>, with a reflog entry saying why, so that it is never only in
// a reflog; it returns that ref.
func (m *Manager) keepCommit(ctx context.Context, p *project, kind, branch, commit, why string) (string, error) {
	ref := "refs/codehydra/" + kind + "/" + branch + "/" + m.now().UTC().Format("20060102T150405.000000000Z")
	if _, err := m.git.run(ctx, p.Path, "update-ref", "--create-reflog", "-m", "codehydra: "+why, ref, commit, ""); err != nil {
		return "", classify(err, CodeInternal, "cannot keep commit %s of branch %s under %s", short(commit), branch, ref)
	}
	return ref, nil
}
