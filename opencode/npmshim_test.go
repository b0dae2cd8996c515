package opencode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNpmShimTargetIsTheExeTheCmdRuns pins where Windows looks for the
// opencode.exe behind npm's opencode.cmd, for a local install (the tools
// folder) and a global one (%APPDATA%\npm), and that anything else is run
// as it is.
func TestNpmShimTargetIsTheExeTheCmdRuns(t *testing.T) {
	touch := func(t *testing.T, p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		files []string // made executable under a temp folder
		path  string   // relative to it
		want  string   // relative to it
	}{
		{"local install", []string{"node_modules/.bin/opencode.cmd", "node_modules/opencode-ai/bin/opencode.exe"},
			"node_modules/.bin/opencode.cmd", "node_modules/opencode-ai/bin/opencode.exe"},
		{"global install", []string{"npm/opencode.cmd", "npm/node_modules/opencode-ai/bin/opencode.exe"},
			"npm/opencode.cmd", "npm/node_modules/opencode-ai/bin/opencode.exe"},
		{"upper-case extension", []string{"npm/OPENCODE.CMD", "npm/node_modules/opencode-ai/bin/opencode.exe"},
			"npm/OPENCODE.CMD", "npm/node_modules/opencode-ai/bin/opencode.exe"},
		{"a shim without the exe", []string{"node_modules/.bin/opencode.cmd"},
			"node_modules/.bin/opencode.cmd", "node_modules/.bin/opencode.cmd"},
		{"not a shim", []string{"bin/opencode.exe", "bin/node_modules/opencode-ai/bin/opencode.exe"},
			"bin/opencode.exe", "bin/opencode.exe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tt.files {
				touch(t, filepath.Join(root, filepath.FromSlash(f)))
			}
			got := npmShimTarget(filepath.Join(root, filepath.FromSlash(tt.path)))
			if want := filepath.Join(root, filepath.FromSlash(tt.want)); got != want {
				t.Errorf("npmShimTarget(%s) = %s, want %s", tt.path, got, want)
			}
		})
	}
}
