package workspace

import (
	"context"
	"strings"
)

// ChangedFiles counts the files the workspace at wsPath changed against
// its base, as Diff lists them (committed since the merge-base with the
// base, uncommitted, untracked), without making the patch: what a list of
// workspaces shows for each.
func (m *Manager) ChangedFiles(ctx context.Context, wsPath string) (int, error) {
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return 0, err
	}
	base := m.baseOf(ctx, p, ws.Branch)
	if err := validateBase(base); err != nil {
		return 0, Errorf(CodeInvalidInput, "the workspace has no base to compare with (%v); set its metadata key base", err)
	}
	mb, err := m.git.run(ctx, ws.Path, "merge-base", "--end-of-options", base, "HEAD")
	if err != nil {
		return 0, classify(err, CodeInvalidInput, "%s and the workspace's HEAD have no commit in common", base)
	}
	committed, err := m.git.runEnv(ctx, ws.Path, []string{"GIT_OPTIONAL_LOCKS=0"},
		"diff", "--no-ext-diff", "--no-textconv", "-M", "--name-only", "-z", strings.TrimSpace(mb), "HEAD")
	if err != nil {
		return 0, classify(err, CodeInternal, "cannot compare %s with %s", ws.Path, base)
	}
	status, err := m.git.runEnv(ctx, ws.Path, []string{"GIT_OPTIONAL_LOCKS=0"},
		"status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return 0, classify(err, CodeInternal, "cannot read the status of %s", ws.Path)
	}
	files := map[string]bool{}
	for f := range strings.SplitSeq(committed, "\x00") {
		if f != "" {
			files[f] = true
		}
	}
	c := parsePorcelainZ(status)
	for _, f := range append(c.Changed, c.Untracked...) {
		files[f] = true
	}
	return len(files), nil
}
