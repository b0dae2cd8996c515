// Package instance keeps CodeHydra to one running instance per user and
// tells other programs where it is: a lock file held with flock(2) for as
// long as the process lives, and an instance file with the pid and the MCP
// server's address and token (docs/DESIGN.md "Files").
package instance

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"codehydra/internal/atomicfile"
)

// Info is the content of the instance file.
type Info struct {
	PID       int       `json:"pid"`
	MCPURL    string    `json:"mcpUrl"`
	MCPPort   int       `json:"mcpPort"`
	Token     string    `json:"token"`
	StartedAt time.Time `json:"startedAt"`
}

// Where says where the instance is: "pid N, MCP at URL" or "pid N, no MCP
// server".
func (i Info) Where() string {
	if i.MCPURL == "" {
		return fmt.Sprintf("pid %d, no MCP server", i.PID)
	}
	return fmt.Sprintf("pid %d, MCP at %s", i.PID, i.MCPURL)
}

// ErrNotRunning is returned (wrapped) by Read when there is no instance file.
var ErrNotRunning = errors.New("no instance file")

// Write stores info at path atomically with mode 0600, first making sure its
// folder is private (see EnsureDir).
func Write(path string, info Info) error {
	if err := EnsureDir(filepath.Dir(path)); err != nil {
		return err
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("write instance file: %w", err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write instance file: %w", err)
	}
	return nil
}

// Read returns the instance file at path. A missing file gives an error
// wrapping ErrNotRunning. Read does not check that the pid is alive; see
// Alive.
//
// The file must be the user's own, as Write makes it: its folder a real
// folder (no link) of the user's that no one else may write, the file a
// regular file of the user's. Where the runtime folder falls back to the
// shared temporary folder, another user could have made both first and
// named their own server in it, to be sent the token and to answer the
// command line's calls. The MCP address it names must be this machine's
// loopback.
func Read(path string) (Info, error) {
	if err := checkOwn(filepath.Dir(path), true); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Info{}, fmt.Errorf("read instance file %s: %w", path, ErrNotRunning)
		}
		return Info{}, err
	}
	if err := checkOwn(path, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Info{}, fmt.Errorf("read instance file %s: %w", path, ErrNotRunning)
		}
		return Info{}, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("read instance file %s: %w", path, ErrNotRunning)
	}
	if err != nil {
		return Info{}, fmt.Errorf("read instance file: %w", err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return Info{}, fmt.Errorf("read instance file %s: %w", path, err)
	}
	if err := checkLoopbackURL(info.MCPURL, info.MCPPort); err != nil {
		return Info{}, fmt.Errorf("instance file %s: %w", path, err)
	}
	return info, nil
}

// checkLoopbackURL accepts only http://127.0.0.1, [::1] or localhost
// with the file's port: CodeHydra's MCP server listens nowhere else.
func checkLoopbackURL(raw string, port int) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Port() != strconv.Itoa(port) || port <= 0 {
		return fmt.Errorf("mcpUrl %q is not this machine's loopback with port %d: not CodeHydra's; remove the file if CodeHydra is not running", raw, port)
	}
	switch u.Hostname() {
	case "127.0.0.1", "::1", "localhost":
		return nil
	}
	return fmt.Errorf("mcpUrl %q is not on this machine's loopback: not CodeHydra's; remove the file if CodeHydra is not running", raw)
}

// Remove deletes the instance file at path; a missing file is not an error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove instance file: %w", err)
	}
	return nil
}

// Running reads the instance file at path and reports whether the instance
// it names still runs, which the single-instance lock at lockPath tells
// (not the pid, which the system may have given to another process). No
// file, or the file of an instance that is gone (one that crashed), gives
// running false and no error; a file that cannot be read gives an error
// that tells the user what to do.
func Running(path, lockPath string) (info Info, running bool, err error) {
	info, err = Read(path)
	if errors.Is(err, ErrNotRunning) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("%w (remove the file if CodeHydra is not running)", err)
	}
	held, err := Held(lockPath)
	if err != nil {
		return Info{}, false, err
	}
	return info, held, nil
}
