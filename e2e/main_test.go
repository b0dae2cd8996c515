// Package e2e holds the end-to-end tests: the built codehydra binary run
// as a user runs it (serve, the tray app under Xvfb, the command line),
// with real git, the real opencode driven by a fake model, the MCP
// conformance suite and the kernel sandbox; and the tests that pin the
// repository's layout. The tests run in e2e/ and reach the rest of the
// repository as "..".
package e2e

import (
	"os"
	"testing"

	_ "codehydra/internal/cleanlocale" // before Fyne initialises, as in cmd/codehydra-gui/main.go
	"codehydra/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.Main(m, "codehydra-e2e-test-home-")
	if appBuild.dir != "" {
		os.RemoveAll(appBuild.dir)
	}
	os.Exit(code)
}

// isolate points every file of the app, git's global config and the
// display at a fresh temp folder.
func isolate(t *testing.T) string { return testenv.Isolate(t) }
