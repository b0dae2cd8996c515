//go:build unix

package wsfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/workspace"
)

// TestReadRefusesAFileWithAnotherNameOutsideTheWorkspace: a hard link in
// the workspace to a file outside it (the user's, writable by the agent's
// user) was read like any file. A file with more than one name is
// refused, with the reason.
func TestReadRefusesAFileWithAnotherNameOutsideTheWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("swordfish"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(ws, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "plain.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := New(ws, nil, nil)
	page, err := f.Read("innocent.txt", 0, 0)
	var we *workspace.Error
	if !errors.As(err, &we) || we.Code != workspace.CodeForbidden || !strings.Contains(err.Error(), "2 names (hard links)") || strings.Contains(page.Content, "swordfish") {
		t.Fatalf("Read of a hard link = %+v, %v; want forbidden, naming the links", page, err)
	}
	if page, err := f.Read("plain.txt", 0, 0); err != nil || page.Content != "hello" {
		t.Fatalf("Read of a plain file = %+v, %v", page, err)
	}
}

// TestWithheldSaysWhyADiffMustNotShowAFile: a diff withholds what the
// file tools do not read (the deny list, a file with another name), and
// shows the rest, a file that is gone included.
func TestWithheldSaysWhyADiffMustNotShowAFile(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("swordfish"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(ws, "sub", "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plain.txt", ".env"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := New(ws, []string{"private/"}, nil)
	for rel, want := range map[string]string{
		"sub/innocent.txt":  "2 names (hard links)",
		".env":              `deny list refuses it (it matches ".env*")`,
		"private/gone.txt":  `deny list refuses it (it matches "private/")`,
		"plain.txt":         "",
		"gone.txt":          "",
		"sub/gone/deep.txt": "",
	} {
		got := f.Withheld(rel)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("Withheld(%s) = %q, want %q", rel, got, want)
		}
	}
}

// TestReadOfAFileSwappedForAFIFOReturnsAtOnce: a FIFO put in place of the
// file between Read's look at it and its open blocked the open until a
// writer came. The open does not wait, and what was opened is looked at
// again.
func TestReadOfAFileSwappedForAFIFOReturnsAtOnce(t *testing.T) {
	ws := t.TempDir()
	path := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(path, []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	beforeOpen = func(string) {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeOpen = func(string) {} })
	done := make(chan error, 1)
	go func() {
		_, err := New(ws, nil, nil).Read("notes.txt", 0, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Read of a file swapped for a FIFO = %v, want not a regular file", err)
		}
	case <-time.After(30 * time.Second):
		// Unblock the open so that the test can end.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("Read blocked on a FIFO swapped in before its open")
	}
}
