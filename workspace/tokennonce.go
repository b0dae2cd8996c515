package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A workspace's MCP token is derived from the master token, the
// workspace's path and a nonce of the worktree's registration with git, so
// that a workspace deleted and later made again at the same path gets a
// new token and the old one stays refused. The nonce lives in git's admin
// folder of the worktree (<common dir>/worktrees/<name>), which git makes
// at `worktree add` and removes with the worktree: it goes exactly when
// the registration goes. A worktree made outside the app gets one the
// first time a token is needed.

// TokenNonceFile is the name of the nonce file in a worktree's git admin
// folder.
const TokenNonceFile = "codehydra-token-nonce"

// nonceBytes is the number of random bytes of a nonce; the file holds them
// hex-encoded.
const nonceBytes = 16

// TokenNonce returns the registration nonce of the linked worktree at
// wsPath, creating it (0600, atomically, never replacing one that another
// process made first) when the worktree has none yet. The main checkout of
// a repository has none: it is its project, never a workspace.
func TokenNonce(wsPath string) (string, error) {
	file, err := nonceFile(wsPath)
	if err != nil {
		return "", err
	}
	if n, err := readNonce(file); !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	if err := createNonce(file); err != nil {
		return "", err
	}
	return readNonce(file)
}

// ReadTokenNonce returns the registration nonce of the linked worktree at
// wsPath without creating one; a worktree without one is an error
// wrapping fs.ErrNotExist.
func ReadTokenNonce(wsPath string) (string, error) {
	file, err := nonceFile(wsPath)
	if err != nil {
		return "", err
	}
	return readNonce(file)
}

// nonceFile is where the nonce of the worktree at wsPath is kept: in the
// admin folder its .git file names, once that folder's gitdir names the
// worktree back (a copied or hand-edited .git file does not borrow another
// worktree's registration).
func nonceFile(wsPath string) (string, error) {
	dotGit := filepath.Join(wsPath, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return "", fmt.Errorf("find the git registration of %s: %w", wsPath, err)
	case fi.IsDir():
		return "", fmt.Errorf("%s is the main checkout of its repository, which is a project and never a workspace, so it has no workspace token", wsPath)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("find the git registration of %s: %s is not a file", wsPath, dotGit)
	}
	admin, ok := readPointer(dotGit, "gitdir:")
	if !ok {
		return "", fmt.Errorf("find the git registration of %s: %s names no git folder", wsPath, dotGit)
	}
	admin = resolveMaybeMissing(absIn(wsPath, admin))
	back, ok := readPointer(filepath.Join(admin, "gitdir"), "")
	if filepath.Base(filepath.Dir(admin)) != "worktrees" || !ok || pathKey(resolveMaybeMissing(absIn(admin, back))) != pathKey(resolveMaybeMissing(dotGit)) {
		return "", fmt.Errorf("find the git registration of %s: git's record %s does not point back at %s", wsPath, admin, dotGit)
	}
	return filepath.Join(admin, TokenNonceFile), nil
}

func readNonce(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read the token nonce: %w", err)
	}
	n := strings.TrimSpace(string(b))
	if raw, err := hex.DecodeString(n); err != nil || len(raw) != nonceBytes {
		return "", fmt.Errorf("the token nonce %s is damaged; remove it (the workspace then gets a new token)", file)
	}
	return n, nil
}

// createNonce writes a new nonce to file unless one is there: the nonce is
// written whole to a temp file first and then linked into place, which
// fails if the file exists, so a reader never sees a half-written nonce and
// two processes creating one at once agree on the winner's.
func createNonce(file string) error {
	raw := make([]byte, nonceBytes)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("generate a token nonce: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), TokenNonceFile+".tmp*")
	if err != nil {
		return fmt.Errorf("create the token nonce: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(raw) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the token nonce: %w", err)
	}
	if err := os.Link(tmp.Name(), file); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create the token nonce %s: %w", file, err)
	}
	return nil
}
