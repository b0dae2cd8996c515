//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// These run the whole command, so they need a real read-only folder rather
// than atomicfile's injected refusals; where none can be had (root without
// chattr) they skip, and fail under make test (testenv.RequireFaultsEnv).

// TestServeWithAnUnwritableOpencodeConfigStopsWithAClearError: the config
// must be written before any agent starts (docs/DESIGN.md "Shape"), so serve
// stops, says which file it could not write and why, and leaves the
// previous file as it was.
func TestServeWithAnUnwritableOpencodeConfigStopsWithAClearError(t *testing.T) {
	isolate(t)
	cfg := paths.OpencodeConfigFile()
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"previous":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.ReadOnlyDir(t, filepath.Dir(cfg))
	code, _, errOut := runCmd(t, "serve")
	if code != 1 || !strings.Contains(errOut, "could not write the OpenCode config") || !strings.Contains(errOut, cfg) ||
		!strings.Contains(errOut, "operation not permitted") && !strings.Contains(errOut, "permission denied") {
		t.Fatalf("serve = %d, stderr %q; want 1 and the file and the reason", code, errOut)
	}
	if b, _ := os.ReadFile(cfg); string(b) != `{"previous":true}` {
		t.Fatalf("the previous config changed to %q", b)
	}
}

// TestServeWithUnwritableSettingsKeepsThemAndSaysSo: a project given on
// the command line cannot be saved; serve says so with the reason, keeps
// running, and the settings file keeps its content.
func TestServeWithUnwritableSettingsKeepsThemAndSaysSo(t *testing.T) {
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	file := paths.SettingsFile()
	if err := settings.Save(file, settings.Default()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(file)
	testenv.ReadOnlyDir(t, filepath.Dir(file))
	r := start(t, "serve", "--project", repo)
	waitRunning(t, r)
	if errOut := r.stderr.String(); !strings.Contains(errOut, "could not add project "+repo) || !strings.Contains(errOut, "settings file is writable") {
		t.Fatalf("stderr %q should name the project and say to check the settings file", errOut)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatalf("the settings file changed to %q", after)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}
