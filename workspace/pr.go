package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Pushing a workspace's branch for its pull request (issue 23). Opening
// the pull request itself is the user's command's job (package
// internal/pullrequest).

// DefaultRemote is the remote Push pushes to when none is named.
const DefaultRemote = "origin"

// PushOptions choose where Push pushes and what it refuses.
type PushOptions struct {
	// Remote is the git remote pushed to; "" for DefaultRemote.
	Remote string
	// CreatedBranchOnly refuses a branch that CodeHydra did not create for
	// a workspace (one that existed before it, or one the workspace's
	// agent switched to): an agent may push its own work, never the
	// user's branches.
	CreatedBranchOnly bool
}

// ErrNoRemote is in the error of a Push in a project that has no git
// remote at all.
var ErrNoRemote = errors.New("the project has no git remote")

// Push pushes the branch of the workspace at wsPath to the remote, as
// `git push -u <remote> <branch>` does, run in the repository's git
// folder with no work tree, so that no config of the workspace's own
// (config.worktree) applies: never forced, so a remote branch
// that moved elsewhere is not overwritten, and the branch's upstream is
// the remote's branch after it. It runs the way the manager runs all its
// git: no hook, so a pre-push hook of the repository's does not run. It
// answers the remote, the branch and the base a pull request goes into
// (the workspace's base, without "<remote>/" when that is a branch of the
// remote), with Pushed set. The remote must exist (the error names those
// that do; ErrNoRemote is in it when there is none); a rejected push is a
// CodeConflict with git's reason. No error or message holds credentials
// of a remote's URL.
func (m *Manager) Push(ctx context.Context, wsPath string, o PushOptions) (PullRequest, error) {
	remote := o.Remote
	if remote == "" {
		remote = DefaultRemote
	}
	if strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, " \t\r\n\x00") {
		return PullRequest{}, Errorf(CodeInvalidInput, "remote %q is not a git remote's name", remote)
	}
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return PullRequest{}, err
	}
	branch, err := m.currentBranch(ctx, ws.Path)
	if err != nil {
		return PullRequest{}, classify(err, CodeInternal, "cannot read the branch of %s", ws.Path)
	}
	if branch == "" {
		return PullRequest{}, Errorf(CodeInvalidInput, "workspace %s is on a detached HEAD; check out a branch there to push it", ws.Path)
	}
	if o.CreatedBranchOnly {
		created, err := m.createdBranch(ctx, p, branch)
		if err != nil {
			return PullRequest{}, classify(err, CodeInternal, "cannot read the records of branch %s", branch)
		}
		if !created || !ownBranch(ws, branch) {
			return PullRequest{}, Errorf(CodeForbidden, "branch %s was not created by CodeHydra for workspace %s; only the user may push it", branch, ws.Path)
		}
	}
	if err := m.checkRemote(ctx, p, remote); err != nil {
		return PullRequest{}, err
	}
	pr := PullRequest{Remote: remote, Branch: branch, Base: m.remoteBase(ctx, p, branch, remote)}
	if pr.Base == branch {
		return PullRequest{}, Errorf(CodeInvalidInput, "workspace %s is on %s, its own base; a pull request needs a branch of its own", ws.Path, branch)
	}

	// The push runs in the repository itself, not in the workspace: the
	// workspace's own config (config.worktree, its agent's to write) must
	// not steer the user's credentials through a proxy, another URL or a
	// credential helper.
	ref := "refs/heads/" + branch
	var porcelain bytes.Buffer
	err = m.git.runTo(ctx, p.commonDir, []string{"GIT_DIR=" + p.commonDir}, &porcelain, "push", "--porcelain", remote, ref+":"+ref)
	if err != nil {
		if ctx.Err() != nil {
			return PullRequest{}, fmt.Errorf("push %s to %s: %w", branch, remote, ctx.Err())
		}
		return PullRequest{}, pushError(err, porcelain.String(), branch, remote)
	}
	// -u's part, done apart so that the project's config is written
	// under its lock, as every other write of it is.
	for _, kv := range [][2]string{{"remote", remote}, {"merge", ref}} {
		if err := m.configSet(ctx, p, "branch."+branch+"."+kv[0], kv[1]); err != nil {
			return PullRequest{}, classify(err, CodeInternal, "pushed %s to %s, but could not record it as the branch's upstream", branch, remote)
		}
	}
	pr.Pushed = true
	return pr, nil
}

// ownBranch reports whether branch is the one the workspace ws was made
// for: Create names a workspace's folder after its branch (worktreePath),
// so a branch checked out there later, such as a sibling's, is not its own.
func ownBranch(ws Workspace, branch string) bool {
	return filepath.Base(ws.Path) == strings.ReplaceAll(branch, "/", "%")
}

// checkRemote refuses a remote the project does not have.
func (m *Manager) checkRemote(ctx context.Context, p *project, remote string) error {
	out, err := m.git.run(ctx, p.Path, "remote")
	if err != nil {
		return classify(err, CodeInternal, "cannot list the remotes of %s", p.Path)
	}
	remotes := strings.Fields(out)
	switch {
	case len(remotes) == 0:
		return &Error{Code: CodeInvalidInput, Err: ErrNoRemote,
			Message: fmt.Sprintf("project %s has no git remote to push to; add one (git remote add %s <url>)", p.Path, remote)}
	case !slices.Contains(remotes, remote):
		return Errorf(CodeInvalidInput, "project %s has no remote %q, only %s; set the project's remote in the settings (projectSetup) or add it (git remote add %s <url>)",
			p.Path, remote, strings.Join(remotes, ", "), remote)
	}
	return nil
}

// remoteBase is the branch of remote that a pull request of branch goes
// into: its base, without the "<remote>/" of a remote-tracking branch.
func (m *Manager) remoteBase(ctx context.Context, p *project, branch, remote string) string {
	base := strings.TrimPrefix(m.baseOf(ctx, p, branch), "refs/heads/")
	base = strings.TrimPrefix(base, "refs/remotes/")
	if name, ok := strings.CutPrefix(base, remote+"/"); ok {
		if _, err := m.git.run(ctx, p.Path, "rev-parse", "--verify", "-q", "--end-of-options", "refs/remotes/"+base); err == nil {
			return name
		}
	}
	return base
}

// pushError says why git refused or failed a push: the status git gave
// the branch (--porcelain) and what the remote said, or git's own error,
// with the credentials of any URL taken out.
func pushError(err error, porcelain, branch, remote string) error {
	var said []string
	for line := range strings.Lines(stderrOf(err)) {
		line = strings.TrimSpace(line)
		if text, ok := strings.CutPrefix(line, "remote:"); ok && strings.TrimSpace(text) != "" {
			said = append(said, strings.TrimSpace(text))
		}
	}
	for line := range strings.Lines(porcelain) {
		// "!\t<from>:<to>\t[rejected] (non-fast-forward)"
		if f := strings.Split(strings.TrimRight(line, "\n"), "\t"); len(f) >= 3 && f[0] == "!" {
			reason := f[2]
			if len(said) > 0 {
				reason += "; the remote said: " + strings.Join(said[:min(len(said), 5)], " / ")
			}
			return Errorf(CodeConflict, "%s rejected the push of %s: %s. Bring the branch up to date with %s/%s (or ask its owner), then push again",
				remote, branch, RedactCredentials(reason), remote, branch)
		}
	}
	var why []string
	for line := range strings.Lines(stderrOf(err)) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "fatal:") || strings.HasPrefix(line, "error:") {
			why = append(why, line)
		}
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("git exited with code %d", exitCode(err)))
	}
	return Errorf(CodeInternal, "could not push %s to %s: %s", branch, remote, RedactCredentials(strings.Join(why, " ")))
}

// credentialsRe finds the user and password of a URL (scheme://user:pw@).
var credentialsRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'"]+@`)

// RedactCredentials takes the user and password out of every URL in s,
// so that a message that quotes a remote's URL can be shown and logged.
func RedactCredentials(s string) string {
	return credentialsRe.ReplaceAllString(s, "${1}***@")
}

// GitEnv returns the environment for a program that CodeHydra runs
// outside any sandbox in dir, a workspace or a project's main checkout,
// and that runs git there itself (gh does): CodeHydra's own environment
// with what its own git gets (no hook or fsmonitor, no inherited GIT_*
// pointing elsewhere, and in a workspace git's folders pinned; see
// gitenv.Env and pinnedGit). The error says why no git may run there.
func (m *Manager) GitEnv(dir string) ([]string, error) {
	pinned, err := m.pinnedGit(filepath.Clean(dir))
	if err != nil {
		return nil, err
	}
	return m.git.env(pinned), nil
}
