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

// The protocol revisions ConformanceSuite has a suite for.
const (
	// Conformance20251125 is the 2025-11-25 protocol (sessions), tested by
	// suite 0.1.16.
	Conformance20251125 = "2025-11-25"
	// Conformance20260728 is the 2026-07-28 protocol (stateless), tested by
	// the suite's 0.2.0 line.
	Conformance20260728 = "2026-07-28"
)

// ConformanceSuite returns the MCP conformance suite for a protocol
// revision (Conformance20251125 or Conformance20260728) that
// build/setup.sh installs into the folder ConformanceEnv names (by default
// $XDG_DATA_HOME/codehydra/tools/conformance; the 0.2.0 line in its
// 2026-07-28 folder). It skips the test in -short mode, and ends it through
// CannotRun (RequireConformanceEnv) when the suite or its Node is missing.
func ConformanceSuite(t testing.TB, revision string) Conformance {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the MCP conformance suite, skipped in -short mode")
	}
	dir := os.Getenv(ConformanceEnv)
	if dir == "" {
		dir = machineConformance()
	}
	prefix := dir
	switch revision {
	case Conformance20251125:
	case Conformance20260728:
		prefix = filepath.Join(dir, revision)
	default:
		t.Fatalf("no MCP conformance suite for protocol revision %q", revision)
	}
	c := Conformance{
		Node:  filepath.Join(dir, "node_modules", ".bin", "node"),
		Suite: filepath.Join(prefix, "node_modules", ".bin", "conformance"),
	}
	for _, f := range []string{c.Node, c.Suite} {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			CannotRun(t, RequireConformanceEnv, "MCP conformance suite for %s not found (no %s): run `make setup` (installs it into %s) or set %s", revision, f, dir, ConformanceEnv)
		}
	}
	return c
}

// machineConformance is where build/setup.sh installs the suite, read from
// the environment as it is now (see machineTools).
func machineConformance() string {
	return filepath.Join(machineTools(), "conformance")
}
