//go:build unix

package settings

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/atomicfile"
	"codehydra/internal/testenv"
)

// When the settings cannot be written — a read-only folder, a full disk —
// the caller gets an error that names the file and the reason, the file
// keeps its previous content, and the running app keeps its previous
// settings.

func TestSaveOnAFullDiskKeepsThePreviousFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	old := Default()
	old.MCPPort = 1234
	if err := Save(path, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	next := old
	next.MCPPort = 4321
	for _, room := range []int{0, 10, len(before) - 1} {
		w := atomicfile.Writer{Wrap: func(f io.Writer) io.Writer { return &testenv.FullDisk{W: f, Room: room} }}
		err := saveWith(w, path, next)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no space left") {
			t.Fatalf("full after %d bytes: error %v; want one naming %s and the full disk", room, err, path)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Fatalf("full after %d bytes: the file changed to %q", room, after)
		}
	}
	if got, err := Load(path); err != nil || got.MCPPort != 1234 {
		t.Fatalf("Load after the failed saves = %+v, %v", got, err)
	}
}

// The refusals of a read-only folder are injected, so that they are tested
// for every user (modes do not stop root); the real read-only folder runs
// too where it can (see testenv.ReadOnlyDir).
func TestStoreUpdateInAReadOnlyFolderKeepsFileAndSettings(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, st *Store)
	}{
		{"temp file refused", func(_ *testing.T, st *Store) { st.w = atomicfile.Writer{CreateTemp: testenv.RefuseCreate} }},
		{"rename refused", func(_ *testing.T, st *Store) { st.w = atomicfile.Writer{Rename: testenv.RefuseRename} }},
		{"real read-only folder", func(t *testing.T, st *Store) { testenv.ReadOnlyDir(t, filepath.Dir(st.Path())) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "settings.json")
			st := NewStore(path)
			if err := st.Update(func(s *Settings) { s.Projects = []string{"/kept"} }); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			tt.setup(t, st)
			err := st.Update(func(s *Settings) { s.Projects = []string{"/lost"} })
			if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v; want a permission error naming %s", err, path)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatalf("the file changed to %q", after)
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Fatalf("files left in %s: %v", dir, es)
			}
			if got := st.Get().Projects; !reflect.DeepEqual(got, []string{"/kept"}) {
				t.Fatalf("the store took the settings it could not save: %v", got)
			}
			if err := st.SaveProjects([]string{"/lost"}); err == nil {
				t.Fatal("SaveProjects into a read-only folder succeeded")
			}
		})
	}
}
