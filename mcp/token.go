package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"codehydra/internal/atomicfile"
	"codehydra/workspace"
)

// tokenBytes is the number of random bytes in a token; the file holds them
// hex-encoded.
const tokenBytes = 32

// Token is the MCP access token: a secret every request must carry as
// "Authorization: Bearer <token>". It lives in a 0600 file so that it
// survives restarts (agents and external clients keep working) and can be
// replaced with Rotate. A Token is safe for concurrent use.
type Token struct {
	path string
	rand io.Reader // crypto/rand.Reader; tests may replace it

	mu    sync.RWMutex
	value string
}

// LoadOrCreateToken reads the token kept at path, or creates one (32 random
// bytes, hex) in a 0600 file inside a 0700 folder when the file is missing
// or does not hold a well-formed token.
func LoadOrCreateToken(path string) (*Token, error) {
	t := &Token{path: path, rand: rand.Reader}
	if err := ensurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if v := strings.TrimSpace(string(data)); validToken(v) {
			// A file left readable by others (copied, restored from a
			// backup) would leak the token; tighten it.
			if err := os.Chmod(path, 0o600); err != nil {
				return nil, fmt.Errorf("restrict token file %s: %w", path, err)
			}
			t.value = v
			return t, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read token file %s: %w", path, err)
	}
	if err := t.Rotate(); err != nil {
		return nil, err
	}
	return t, nil
}

// ReadToken reads the token kept at path without creating or changing
// anything, for programs other than the app (the command line). A missing
// file, or one that does not hold a well-formed token, is an error:
// LoadOrCreateToken would replace such a token at the app's next launch.
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	v := strings.TrimSpace(string(data))
	if !validToken(v) {
		return "", fmt.Errorf("token file %s holds no valid token", path)
	}
	return v, nil
}

// Value returns the current token.
func (t *Token) Value() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.value
}

// Path returns the file the token is kept in.
func (t *Token) Path() string { return t.path }

// Rotate replaces the token with a new random one, writes it atomically and
// makes it the only accepted token at once: requests carrying the old one
// get 401 from then on. Running agents must be given the new token.
func (t *Token) Rotate() error {
	buf := make([]byte, tokenBytes)
	if _, err := io.ReadFull(t.rand, buf); err != nil {
		return fmt.Errorf("generate token: %w", err)
	}
	v := hex.EncodeToString(buf)
	// Hold the lock across the write so that two rotations cannot leave the
	// file and the memory disagreeing.
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := atomicfile.Write(t.path, []byte(v+"\n"), 0o600); err != nil {
		return fmt.Errorf("save token: %w", err)
	}
	t.value = v
	return nil
}

// Matches reports, in constant time, whether candidate is the current token.
func (t *Token) Matches(candidate string) bool {
	v := t.Value()
	return v != "" && subtle.ConstantTimeCompare([]byte(candidate), []byte(v)) == 1
}

// ForWorkspace returns the current token of the workspace at wsPath (see
// WorkspaceToken).
func (t *Token) ForWorkspace(wsPath string) (string, error) {
	return WorkspaceToken(t.Value(), wsPath)
}

// WorkspaceToken is the token of the workspace at wsPath (its canonical
// path, as workspace.Workspace.Path holds it) under the master token. It
// is what that workspace's agent carries instead of the master token, and
// the one function every part that hands out or checks a workspace token
// uses (the app for agents, the command line, the server). It mixes in the
// nonce of the worktree's registration with git (workspace.TokenNonce,
// made on first use), so it changes when the master token rotates and
// when the workspace is deleted and made again at the same path; it cannot
// be turned back into the master token, and the server accepts it only
// while that registration lasts, and only for that workspace.
func WorkspaceToken(master, wsPath string) (string, error) {
	nonce, err := workspace.TokenNonce(wsPath)
	if err != nil {
		return "", fmt.Errorf("derive the token of workspace %s: %w", wsPath, err)
	}
	return workspaceToken(master, wsPath, nonce), nil
}

// workspaceToken is hex(HMAC-SHA256(master, "workspace:" + nonce + ":" +
// wsPath)). The nonce is fixed-length hex, so no two (nonce, path) pairs
// give the same message.
func workspaceToken(master, wsPath, nonce string) string {
	mac := hmac.New(sha256.New, []byte(master))
	mac.Write([]byte("workspace:" + nonce + ":" + wsPath))
	return hex.EncodeToString(mac.Sum(nil))
}

func validToken(v string) bool {
	if len(v) != 2*tokenBytes {
		return false
	}
	_, err := hex.DecodeString(v)
	return err == nil
}

// ensurePrivateDir creates dir with mode 0700, or tightens it to 0700 when it
// exists: the folder is CodeHydra's own and holds secrets.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create folder %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restrict folder %s: %w", dir, err)
	}
	return nil
}
