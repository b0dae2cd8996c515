// Package atomicfile writes files so that a reader sees either the old or the
// new content, never a mix, and a crash never leaves a truncated file.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with data: it writes a temp file in the same folder,
// fsyncs it, renames it over path and fsyncs the folder. On any failure the
// previous file is left as it was and the temp file is removed.
func Write(path string, data []byte, perm os.FileMode) error {
	return Writer{}.Write(path, data, perm)
}

// WriteFrom is Write with the content produced by fill. A fill error aborts
// the write and leaves path untouched.
func WriteFrom(path string, perm os.FileMode, fill func(io.Writer) error) error {
	return Writer{}.WriteFrom(path, perm, fill)
}

// Writer writes files like Write. Its zero value is Write itself; its fields
// let a test fail each step that touches the disk, for every user: Wrap puts
// a writer of its own between the content and the temp file (e.g. one that
// fails like a full disk after some bytes), CreateTemp and Rename stand in
// for the two steps a read-only folder refuses. (Modes do not stop root, so
// a real read-only folder cannot be had everywhere.)
type Writer struct {
	// Wrap, when set, wraps the temp file's writer.
	Wrap func(io.Writer) io.Writer
	// CreateTemp, when set, replaces os.CreateTemp in making the temp file.
	CreateTemp func(dir, pattern string) (*os.File, error)
	// Rename, when set, replaces os.Rename in moving the temp file over
	// the target.
	Rename func(oldpath, newpath string) error
}

// Write is the package's Write through w.
func (w Writer) Write(path string, data []byte, perm os.FileMode) error {
	return w.WriteFrom(path, perm, func(out io.Writer) error {
		_, err := out.Write(data)
		return err
	})
}

// WriteFrom is the package's WriteFrom through w.
func (w Writer) WriteFrom(path string, perm os.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create folder %s: %w", dir, err)
	}
	createTemp, rename := os.CreateTemp, os.Rename
	if w.CreateTemp != nil {
		createTemp = w.CreateTemp
	}
	if w.Rename != nil {
		rename = w.Rename
	}
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	var out io.Writer = f
	if w.Wrap != nil {
		out = w.Wrap(f)
	}
	if err := fill(out); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		// Without syncing the folder the rename itself may not survive a
		// power loss on some file systems.
		_ = d.Sync()
		d.Close()
	}
	return nil
}
