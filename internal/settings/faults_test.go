//go:build unix

package settings

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/atomicfile"
)

// When the settings cannot be written — a read-only folder, a full disk —
// the caller gets an error that names the file and the reason, the file
// keeps its previous content, and the running app keeps its previous
// settings.

// fullDisk passes on room bytes, then fails like a write to a full disk.
type fullDisk struct {
	w    io.Writer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) <= d.room {
		n, err := d.w.Write(p)
		d.room -= n
		return n, err
	}
	n, _ := d.w.Write(p[:d.room])
	d.room = 0
	return n, syscall.ENOSPC
}

// readOnlyDir makes dir refuse new entries until the test ends: by its
// mode, or for root (whom modes do not stop) with the immutable attribute.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("running as root and cannot make %s immutable (chattr: %v %s)", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
}

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
		w := atomicfile.Writer{Wrap: func(f io.Writer) io.Writer { return &fullDisk{w: f, room: room} }}
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
	readOnlyDir(t, dir)
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
