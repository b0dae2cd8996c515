package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// ConformanceEnv names the folder build/setup.sh installs the MCP
// conformance suite and its Node into (an npm prefix). Main sets it, when
// unset, to the machine's folder before it moves XDG_DATA_HOME.
const ConformanceEnv = "CODEHYDRA_CONFORMANCE_DIR"

// RequireConformanceEnv, set to 1 (make test does), turns
// ConformanceSuite's skip for a missing suite into a failure: make test
// installs the suite first, and a skip would hide a broken install step.
const RequireConformanceEnv = "CODEHYDRA_REQUIRE_CONFORMANCE"

// Conformance is an installed MCP conformance suite
// (@modelcontextprotocol/conformance): run it as Node Suite args….
type Conformance struct {
	// Node is the Node 22 the suite needs; the machine's node may be older.
	Node string
	// Suite is the suite's command-line entry point (a JavaScript file).
	Suite string
}

// ConformanceSuite returns the MCP conformance suite that build/setup.sh
// installs into the folder ConformanceEnv names (by default
// $XDG_DATA_HOME/codehydra/tools/conformance). It skips the test in -short
// mode, and ends it through CannotRun (RequireConformanceEnv) when the
// suite or its Node is missing.
func ConformanceSuite(t testing.TB) Conformance {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the MCP conformance suite, skipped in -short mode")
	}
	dir := os.Getenv(ConformanceEnv)
	if dir == "" {
		dir = machineConformance()
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	c := Conformance{Node: filepath.Join(bin, "node"), Suite: filepath.Join(bin, "conformance")}
	for _, f := range []string{c.Node, c.Suite} {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			CannotRun(t, RequireConformanceEnv, "MCP conformance suite not found (no %s): run `make setup` (installs it into %s) or set %s", f, dir, ConformanceEnv)
		}
	}
	return c
}

// machineConformance is where build/setup.sh installs the suite, read from
// the environment as it is now (see machineTools).
func machineConformance() string {
	return filepath.Join(machineTools(), "conformance")
}
