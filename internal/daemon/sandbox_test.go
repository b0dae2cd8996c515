package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWritableRootsLeaveOutFoldersAnAgentCouldTurnIntoLinks: a writable
// folder inside another writable one (opencode's cache inside ~/.cache)
// is one an agent can replace with a link to anywhere, which the next
// policy would follow: it is covered by its parent and not granted on its
// own; nor is a folder that leads into the home folder's ancestors.
func TestWritableRootsLeaveOutFoldersAnAgentCouldTurnIntoLinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	for _, d := range []string{".cache/opencode", ".npm", "go/pkg", ".local/share/opencode", "private"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The agent turned ~/.cache/go-build (GOCACHE) into a link to the home
	// folder, and a settings entry leads to the home folder's parent.
	if err := os.Symlink(home, filepath.Join(home, ".cache", "go-build")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	list := []string{filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, "go/pkg"),
		filepath.Join(home, ".cache", "opencode"), filepath.Join(home, ".cache", "go-build"), filepath.Join(home, ".local/share/opencode"),
		filepath.Join(root, "up"), filepath.Join(home, ".npm"), filepath.Join(home, "private", "x")}
	got := writableRoots(list, home, []string{filepath.Join(home, "private")})
	want := []string{filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, "go/pkg"), filepath.Join(home, ".local/share/opencode")}
	if !slices.Equal(got, want) {
		t.Errorf("writableRoots =\n%q\nwant\n%q", got, want)
	}
}
