package opencode

import (
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"strings"
)

// An agent's server demands HTTP basic auth as serverUser with a password
// of its own (docs/DESIGN.md "OpenCode"): without one, opencode serves its
// whole API (sessions, shell, files, provider keys) to anyone who reaches
// the port.
const serverUser = "opencode"

// newServerPassword is a fresh password for one start of an agent's
// server: 32 random bytes in hex, so that it needs no quoting in a URL or
// a shell command. It lives in memory only (the supervisor and the agent's
// environment), never in a log or an agent record.
func newServerPassword(random io.Reader) (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("make a password for the agent's server: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// withServerAuth sets the credentials the agent's server demands in its
// environment env. Inherited ones (a CodeHydra started from an agent's
// terminal, a user's own opencode setup) are dropped: the supervisor must
// know the user name and password its agent expects.
func withServerAuth(env []string, password string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if sameEnvKey(k, "OPENCODE_SERVER_PASSWORD") || sameEnvKey(k, "OPENCODE_SERVER_USERNAME") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "OPENCODE_SERVER_USERNAME="+serverUser, "OPENCODE_SERVER_PASSWORD="+password)
}

// sameEnvKey compares environment names as the OS does: Windows ignores
// case.
func sameEnvKey(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
