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

func TestStoreUpdateInAReadOnlyFolderKeepsFileAndSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	st := NewStore(path)
	if err := st.Update(func(s *Settings) { s.Projects = []string{"/kept"} }); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	testenv.ReadOnlyDir(t, dir)
	err := st.Update(func(s *Settings) { s.Projects = []string{"/lost"} })
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v; want a permission error naming %s", err, path)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("the file changed to %q", after)
	}
	if got := st.Get().Projects; !reflect.DeepEqual(got, []string{"/kept"}) {
		t.Fatalf("the store took the settings it could not save: %v", got)
	}
	if err := st.SaveProjects([]string{"/lost"}); err == nil {
		t.Fatal("SaveProjects into a read-only folder succeeded")
	}
}
