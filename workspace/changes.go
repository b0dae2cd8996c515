package workspace

import (
	"context"
	"strings"
)

// Changes are the files of a workspace that deleting it would lose, as
// git status lists them, relative to the workspace's folder.
type Changes struct {
	// Changed are tracked files with staged or unstaged changes (for a
	// rename, its new name).
	Changed []string
	// Untracked are files git does not track and does not ignore; an
	// untracked folder is one entry ending in "/".
	Untracked []string
}

// Changes lists the changed and untracked files of the workspace at
// wsPath, so that a user can see what a delete would lose.
func (m *Manager) Changes(ctx context.Context, wsPath string) (Changes, error) {
	ws, _, err := m.resolve(wsPath)
	if err != nil {
		return Changes{}, err
	}
	out, err := m.git.runEnv(ctx, ws.Path, []string{"GIT_OPTIONAL_LOCKS=0"},
		"status", "--porcelain=v1", "-z", "--untracked-files=normal")
	if err != nil {
		return Changes{}, classify(err, CodeInternal, "cannot list the changes of %s", ws.Path)
	}
	return parsePorcelainZ(out), nil
}

// parsePorcelainZ reads `git status --porcelain=v1 -z`: "XY path" entries
// ended by NUL, a rename or copy followed by its old path.
func parsePorcelainZ(out string) Changes {
	var c Changes
	entries := strings.Split(out, "\x00")
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		xy, path := e[:2], e[3:]
		switch {
		case xy == "??":
			c.Untracked = append(c.Untracked, path)
		case xy == "!!":
		default:
			c.Changed = append(c.Changed, path)
			if xy[0] == 'R' || xy[0] == 'C' {
				i++ // the old path
			}
		}
	}
	return c
}
