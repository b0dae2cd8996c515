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
func (m *Manager) Status(ctx context.Context, wsPath string) (Status, error) {
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return Status{}, err
	}
	// The dirty check and the base comparison are independent; running
	// them side by side halves the wait.
	type result struct {
		out string
		err error
	}
	dirty := make(chan result, 1)
	go func() {
		out, err := m.git.runEnv(ctx, ws.Path, []string{"GIT_OPTIONAL_LOCKS=0"},
			"status", "--porcelain=v1", "-z", "--untracked-files=normal")
		dirty <- result{out, err}
	}()
	st := Status{Agent: NoAgent}
	st.Base = m.baseOf(ctx, p, ws.Branch)
	if st.Base != "" && validateBase(st.Base) == nil {
		out, err := m.git.run(ctx, ws.Path, "rev-list", "--left-right", "--count", st.Base+"...HEAD")
		if err == nil {
			st.Behind, st.Ahead = parseLeftRight(out)
		} else if ctx.Err() == nil {
			m.log.Debug("cannot compare workspace with its base", "path", ws.Path, "base", st.Base, "err", err)
		}
	}
	r := <-dirty
	if r.err != nil {
		return Status{}, classify(r.err, CodeInternal, "cannot read the status of %s", ws.Path)
	}
	st.IsDirty = r.out != ""
	if a := m.currentAgents(); a != nil {
		st.Agent = a.AgentStatus(ws.Path)
	}
	return st, nil
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
