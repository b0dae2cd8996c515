package workspace

import (
	"context"
	"strconv"
	"strings"
)

// Status reports the workspace at wsPath: whether it has staged, unstaged
// or untracked changes, how many commits it is ahead of and behind its base
// (0 and 0 when the base is unknown), and its agent (NoAgent without
// agents). It takes no git lock, so it never gets in the way of an agent's
// own git commands.
//
// It asks git each time; package statuscache answers the git part from
// memory in front of it.
func (m *Manager) Status(ctx context.Context, wsPath string) (Status, error) {
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return Status{}, err
	}
	st, err := m.readStatus(ctx, ws, p, ws.Branch)
	if err != nil {
		return Status{}, err
	}
	st.Agent = m.AgentStatus(ws.Path)
	st.Ports, st.PortsNote = m.Ports(ws.Path)
	return st, nil
}

// readStatus asks git for the git part of ws's Status (Agent left empty);
// branch is the branch checked out there ("" when detached).
func (m *Manager) readStatus(ctx context.Context, ws Workspace, p *project, branch string) (Status, error) {
	// The dirty check and the base comparison are independent; running
	// them side by side halves the wait.
	type result struct {
		dirty bool
		err   error
	}
	dirty := make(chan result, 1)
	go func() {
		d, err := m.GitDirty(ctx, ws.Path)
		dirty <- result{d, err}
	}()
	var st Status
	st.Base, st.Ahead, st.Behind = m.readAheadBehind(ctx, p, ws.Path, branch)
	r := <-dirty
	if r.err != nil {
		return Status{}, r.err
	}
	st.IsDirty = r.dirty
	return st, nil
}

// GitDirty asks git whether the worktree at path has staged, unstaged or
// untracked changes (Status's IsDirty). GIT_OPTIONAL_LOCKS=0 keeps git
// status from refreshing (and so locking) the index.
func (m *Manager) GitDirty(ctx context.Context, path string) (bool, error) {
	out, err := m.git.runEnv(ctx, path, []string{"GIT_OPTIONAL_LOCKS=0"},
		"status", "--porcelain=v1", "-z", "--untracked-files=normal")
	if err != nil {
		return false, classify(err, CodeInternal, "cannot read the status of %s", path)
	}
	return out != "", nil
}

// GitAheadBehind asks git for the base of ws (on branch, "" when
// detached) and how many commits it is ahead of and behind it (Status's
// Base, Ahead and Behind); 0 and 0 when the base is unknown or cannot be
// compared, "" and 0 and 0 when ws's project is not open.
func (m *Manager) GitAheadBehind(ctx context.Context, ws Workspace, branch string) (base string, ahead, behind int) {
	m.mu.Lock()
	p := m.projects[pathKey(ws.ProjectPath)]
	m.mu.Unlock()
	if p == nil {
		return "", 0, 0
	}
	return m.readAheadBehind(ctx, p, ws.Path, branch)
}

// readAheadBehind returns the base of the worktree at path (on branch) and
// how many commits it is ahead of and behind it; 0 and 0 when the base is
// unknown or cannot be compared.
func (m *Manager) readAheadBehind(ctx context.Context, p *project, path, branch string) (base string, ahead, behind int) {
	base = m.baseOf(ctx, p, branch)
	if base == "" || validateBase(base) != nil {
		return base, 0, 0
	}
	out, err := m.git.run(ctx, path, "rev-list", "--left-right", "--count", "--end-of-options", base+"...HEAD")
	if err != nil {
		if ctx.Err() == nil {
			m.log.Debug("cannot compare workspace with its base", "path", path, "base", base, "err", err)
		}
		return base, 0, 0
	}
	behind, ahead = parseLeftRight(out)
	return base, ahead, behind
}

// parseLeftRight parses "<left>\t<right>" of rev-list --left-right --count.
func parseLeftRight(out string) (left, right int) {
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0
	}
	left, errL := strconv.Atoi(f[0])
	right, errR := strconv.Atoi(f[1])
	if errL != nil || errR != nil {
		return 0, 0
	}
	return left, right
}
