package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The git plumbing that landing a workspace is made of. It writes objects
// only (trees and commits, which nothing refers to until a ref is moved to
// them), never a working tree, an index or a ref: every new commit of a
// merge, a squash or a replay is made here before any ref moves.

// commitOf returns the commit that rev names in dir, "" when it names none.
func (m *Manager) commitOf(ctx context.Context, dir, rev string) (string, error) {
	out, err := m.git.run(ctx, dir, "rev-parse", "--verify", "-q", "--end-of-options", rev+"^{commit}")
	if exitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// treeOf returns the tree of commit.
func (m *Manager) treeOf(ctx context.Context, dir, commit string) (string, error) {
	out, err := m.git.run(ctx, dir, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// isAncestor reports whether commit a is an ancestor of commit b (or b).
func (m *Manager) isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := m.git.run(ctx, dir, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// mergeTrees merges commit theirs into commit ours (git merge-tree
// --write-tree, the base their merge-base) and returns the tree of the
// result, or the files it conflicts in.
func (m *Manager) mergeTrees(ctx context.Context, dir, ours, theirs string) (tree string, conflicts []string, err error) {
	// Exit 1 is a conflict, with the files on stdout, which run drops.
	var stdout strings.Builder
	err = m.git.exec(ctx, dir, nil, nil, &stdout, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs)
	if err != nil && exitCode(err) != 1 {
		return "", nil, err
	}
	fields := strings.Split(strings.TrimSuffix(stdout.String(), "\x00"), "\x00")
	if err != nil {
		for _, f := range fields[1:] {
			if f != "" && !slices.Contains(conflicts, f) {
				conflicts = append(conflicts, f)
			}
		}
		if len(conflicts) == 0 {
			// A conflict git names no file for (it should not happen);
			// never taken for a clean merge.
			conflicts = []string{"(git named no file)"}
		}
		return "", conflicts, nil
	}
	return fields[0], nil, nil
}

// identityCheck makes git refuse to guess an identity from the user's
// login and host: a commit CodeHydra makes carries the user's configured
// identity (user.name and user.email, or GIT_COMMITTER_* in its
// environment), or none is made.
var identityCheck = []string{"-c", "user.useConfigOnly=true"}

// checkIdentity fails with a sentence the user can act on when git has no
// identity configured to make commits with.
func (m *Manager) checkIdentity(ctx context.Context, dir string) error {
	for _, v := range []string{"GIT_COMMITTER_IDENT", "GIT_AUTHOR_IDENT"} {
		if _, err := m.git.run(ctx, dir, append(slices.Clip(identityCheck), "var", v)...); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &Error{Code: CodeInvalidInput, Err: err, Message: "git has no identity to make the merge's commits with; set one " +
				`(git config --global user.name "Your Name" and git config --global user.email you@example.com), then try again`}
		}
	}
	return nil
}

// syntheticIdent is the identity and date of the throw-away commits that
// a replay merges through and of a preflight's trial commits: fixed, so
// that the same inputs give the same objects.
var syntheticIdent = []string{
	"GIT_AUTHOR_NAME=CodeHydra", "GIT_AUTHOR_EMAIL=codehydra@localhost", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=CodeHydra", "GIT_COMMITTER_EMAIL=codehydra@localhost", "GIT_COMMITTER_DATE=@0 +0000",
}

// commitTree makes a commit of tree with parents and message, the
// identity from env (nil: the user's configured one, see identityCheck).
func (m *Manager) commitTree(ctx context.Context, dir string, env []string, tree string, parents []string, message string) (string, error) {
	args := append(slices.Clip(identityCheck), "commit-tree", tree)
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := m.git.runWith(ctx, dir, env, strings.NewReader(message), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// commitInfo is what a replay keeps of a commit: its first parent, tree,
// author and raw message.
type commitInfo struct {
	id, parent, tree string
	authorEnv        []string
	message          string
}

// readCommit reads commit id (git cat-file commit).
func (m *Manager) readCommit(ctx context.Context, dir, id string) (commitInfo, error) {
	out, err := m.git.run(ctx, dir, "cat-file", "commit", id)
	if err != nil {
		return commitInfo{}, err
	}
	c := commitInfo{id: id}
	headers, message, _ := strings.Cut(out, "\n\n")
	c.message = message
	for line := range strings.SplitSeq(headers, "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.tree = value
		case "parent":
			if c.parent == "" {
				c.parent = value
			}
		case "author":
			// "Name <email> 1700000000 +0100"
			lt, gt := strings.IndexByte(value, '<'), strings.LastIndexByte(value, '>')
			if lt < 0 || gt < lt {
				return commitInfo{}, fmt.Errorf("commit %s has an author line git did not write: %q", id, value)
			}
			c.authorEnv = []string{
				"GIT_AUTHOR_NAME=" + strings.TrimSpace(value[:lt]),
				"GIT_AUTHOR_EMAIL=" + value[lt+1:gt],
				"GIT_AUTHOR_DATE=@" + strings.TrimSpace(value[gt+1:]),
			}
		}
	}
	if c.tree == "" || c.authorEnv == nil {
		return commitInfo{}, fmt.Errorf("commit %s has no tree or author", id)
	}
	return c, nil
}

// emptyTree returns git's empty tree, the base of a replayed root commit.
func (m *Manager) emptyTree(ctx context.Context, dir string) (string, error) {
	out, err := m.git.runInput(ctx, dir, nil, "", "mktree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// replayed is the end of a replay: the new tip, or the files that the
// first commit that did not apply conflicts in, and which commit that was.
type replayed struct {
	tip       string
	conflicts []string
	// at is the commit that conflicted ("<short id> <subject>").
	at string
	// dropped counts the commits left out because their change is in
	// the new base already.
	dropped int
}

// replay replays the commits of upstream..head onto onto, as git rebase
// does, with objects only: merge commits are left out (the history comes
// out linear), so are the commits whose patch upstream has already
// (git's --cherry-pick), and so are those that end up changing nothing.
// Each commit keeps its author, date and message; committer is the
// identity of the new commits (nil: the user's configured one). A commit
// whose parent is where the replay stands is kept as it is.
//
// git 2.39 has no merge-tree --merge-base, so a commit C is picked onto
// the tip T through throw-away commits: B with the tree of C's parent and
// no parent, C' with C's tree on B, T' with T's tree on B; merging C'
// into T' is then the three-way merge of C onto T with C's parent as the
// base.
func (m *Manager) replay(ctx context.Context, dir, onto, upstream, head string, committer []string) (replayed, error) {
	out, err := m.git.run(ctx, dir, "rev-list", "--reverse", "--no-merges", "--right-only", "--cherry-pick", upstream+"..."+head)
	if err != nil {
		return replayed{}, err
	}
	r := replayed{tip: onto}
	tipTree, err := m.treeOf(ctx, dir, onto)
	if err != nil {
		return replayed{}, err
	}
	for id := range strings.FieldsSeq(out) {
		c, err := m.readCommit(ctx, dir, id)
		if err != nil {
			return replayed{}, err
		}
		if c.parent == r.tip {
			r.tip, tipTree = c.id, c.tree
			continue
		}
		tree, conflicts, err := m.pick(ctx, dir, c, tipTree)
		if err != nil {
			return replayed{}, err
		}
		if conflicts != nil {
			subject, _, _ := strings.Cut(c.message, "\n")
			r.conflicts, r.at = conflicts, c.id[:min(12, len(c.id))]+" "+subject
			return r, nil
		}
		if tree == tipTree {
			r.dropped++
			continue
		}
		env := append(slices.Clip(committer), c.authorEnv...)
		if r.tip, err = m.commitTree(ctx, dir, env, tree, []string{r.tip}, c.message); err != nil {
			return replayed{}, err
		}
		tipTree = tree
	}
	return r, nil
}

// pick is the tree of commit c's change applied onto the tree tipTree, or
// the files it conflicts in.
func (m *Manager) pick(ctx context.Context, dir string, c commitInfo, tipTree string) (tree string, conflicts []string, err error) {
	baseTree := ""
	if c.parent == "" {
		baseTree, err = m.emptyTree(ctx, dir)
	} else {
		baseTree, err = m.treeOf(ctx, dir, c.parent)
	}
	if err != nil {
		return "", nil, err
	}
	b, err := m.commitTree(ctx, dir, syntheticIdent, baseTree, nil, "base\n")
	if err != nil {
		return "", nil, err
	}
	theirs, err := m.commitTree(ctx, dir, syntheticIdent, c.tree, []string{b}, "theirs\n")
	if err != nil {
		return "", nil, err
	}
	ours, err := m.commitTree(ctx, dir, syntheticIdent, tipTree, []string{b}, "ours\n")
	if err != nil {
		return "", nil, err
	}
	return m.mergeTrees(ctx, dir, ours, theirs)
}
