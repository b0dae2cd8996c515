package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"codehydra/internal/atomicfile"
)

// A hibernated workspace keeps its worktree, branch, metadata and prompts;
// only its agent is stopped, until something needs it (docs/DESIGN.md
// "Hibernation"). That it is hibernated is recorded beside the token nonce,
// in git's admin folder of the worktree, so that it stays hibernated across
// a restart of CodeHydra and the record goes with the worktree.

// HibernatedFile is the name of the record in a worktree's git admin
// folder; it holds the time the agent was hibernated (RFC 3339, UTC).
const HibernatedFile = "codehydra-hibernated"

// MarkHibernated records that the agent of the linked worktree at wsPath
// is hibernated since since.
func MarkHibernated(wsPath string, since time.Time) error {
	file, err := adminFile(wsPath, HibernatedFile)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(file, []byte(since.UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		return fmt.Errorf("record that %s is hibernated: %w", wsPath, err)
	}
	return nil
}

// UnmarkHibernated removes the record of MarkHibernated; a worktree
// without one is not an error.
func UnmarkHibernated(wsPath string) error {
	file, err := adminFile(wsPath, HibernatedFile)
	if err != nil {
		return err
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record that %s is awake: %w", wsPath, err)
	}
	return nil
}

// HibernatedSince reports whether the linked worktree at wsPath is
// recorded hibernated, and since when. A worktree whose registration
// cannot be read is not hibernated; a record whose time cannot be read
// still is (its time is then zero).
func HibernatedSince(wsPath string) (since time.Time, ok bool) {
	file, err := adminFile(wsPath, HibernatedFile)
	if err != nil {
		return time.Time{}, false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return time.Time{}, false
	}
	since, _ = time.Parse(time.RFC3339, strings.TrimSpace(string(b)))
	return since, true
}

// adminFile is the file called name in the git admin folder of the linked
// worktree at wsPath, once that folder names the worktree back (see
// nonceFile).
func adminFile(wsPath, name string) (string, error) {
	nonce, err := nonceFile(wsPath)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(nonce), name), nil
}
