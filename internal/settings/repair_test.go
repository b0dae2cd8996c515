package settings

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestLoadDropsOnlyARelativeOpencodeBinAndKeepsEveryOtherSetting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	original := absJSON(`{"opencodeBin": "node_modules/.bin/opencode", "mcpPort": 4711, "projects": ["/src/a", "/src/b"],
		"notifications": false, "future": {"kept": true}}`)
	testenv.WriteFile(t, path, original)
	now := time.Date(2006, 11, 2, 15, 4, 5, 0, time.UTC)

	got, err := load(path, func() time.Time { return now })
	var derr *DroppedKeyError
	if !errors.As(err, &derr) {
		t.Fatalf("Load error = %v, want *DroppedKeyError", err)
	}
	if got.OpencodeBin != "" || got.MCPPort != 4711 || !slices.Equal(got.Projects, []string{abs("/src/a"), abs("/src/b")}) || got.Notifications {
		t.Fatalf("Load = %+v, want the file's settings without opencodeBin", got)
	}
	backup := path + ".bad-20061102-150405"
	for _, want := range []string{path, `opencodeBin "node_modules/.bin/opencode" is a relative path`, "every other one is kept", backup} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if derr.WriteErr != nil {
		t.Fatalf("the file was not rewritten: %v", derr.WriteErr)
	}
	if b, err := os.ReadFile(backup); err != nil || string(b) != original {
		t.Fatalf("backup = %q, %v; want the file as it was", b, err)
	}
	// The file now loads without a word, with the same settings and the
	// key the app does not know.
	again, err := Load(path)
	if err != nil {
		t.Fatalf("Load of the rewritten file: %v", err)
	}
	if again.MCPPort != 4711 || len(again.Projects) != 2 || again.OpencodeBin != "" {
		t.Fatalf("rewritten file loads as %+v", again)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"future"`) || strings.Contains(string(b), "node_modules") {
		t.Fatalf("rewritten file:\n%s\nwant the unknown key kept and opencodeBin gone", b)
	}
}

func TestLoadStillMovesAsideAFileWithARelativeOpencodeBinAndAnotherBadValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	testenv.WriteFile(t, path, `{"opencodeBin": "./opencode", "mcpPort": 70000}`)
	_, err := Load(path)
	var cerr *CorruptError
	if !errors.As(err, &cerr) || cerr.MovedTo == "" {
		t.Fatalf("Load error = %v, want the file moved aside", err)
	}
}

func TestReadIgnoresARelativeOpencodeBinAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	content := `{"opencodeBin": "./opencode", "mcpPort": 4711}`
	testenv.WriteFile(t, path, content)
	got, err := Read(path)
	if err != nil || got.MCPPort != 4711 || got.OpencodeBin != "" {
		t.Fatalf("Read = %+v, %v; want mcpPort 4711 without opencodeBin", got, err)
	}
	if b, _ := os.ReadFile(path); string(b) != content || len(dirNames(t, dir)) != 1 {
		t.Fatalf("Read changed the folder: %q, %v", b, dirNames(t, dir))
	}
}
