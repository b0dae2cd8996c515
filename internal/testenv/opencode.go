package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// OpencodeEnv names the opencode binary that RealOpencode returns. Main
// sets it, when unset, to the machine's opencode.
const OpencodeEnv = "CODEHYDRA_OPENCODE"

// RequireOpencodeEnv, set to 1 (make test does), turns RealOpencode's skip
// for a missing opencode into a failure: make test installs opencode
// first, and a skip would hide a broken install step.
const RequireOpencodeEnv = "CODEHYDRA_REQUIRE_OPENCODE"

// RealOpencode returns the real opencode for the tests that run it: the
// file OpencodeEnv names, else the one build/setup.sh installs (see
// machineOpencode). It skips the test in -short mode, and ends it through
// CannotRun (RequireOpencodeEnv) when the binary is missing.
//
// In a package whose TestMain uses Main, Main recorded the machine's
// opencode in OpencodeEnv before it moved HOME and XDG_DATA_HOME; in any
// other package these are still the machine's, so the fallback finds it.
func RealOpencode(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real opencode, skipped in -short mode")
	}
	bin := os.Getenv(OpencodeEnv)
	if bin == "" {
		bin = machineOpencode()
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		CannotRun(t, RequireOpencodeEnv, "real opencode not found at %s: run `make` (installs it there) or set %s", bin, OpencodeEnv)
	}
	return bin
}

// machineOpencode is where build/setup.sh installs opencode (see
// machineTools).
func machineOpencode() string {
	return filepath.Join(machineTools(), "node_modules", ".bin", "opencode")
}

// machineTools is the npm prefix build/setup.sh installs the test tools
// into, read from the environment as it is now:
// $XDG_DATA_HOME/codehydra/tools, or ~/.local/share/codehydra/tools when
// XDG_DATA_HOME is unset.
func machineTools() string {
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		data = filepath.Join(os.Getenv("HOME"), ".local", "share")
	}
	return filepath.Join(data, "codehydra", "tools")
}
