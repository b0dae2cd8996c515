// Package rotate is an append-only log file that rotates by size while it
// is written: when a write would take the file over its limit, the file is
// moved to <path>.1 (older ones to .2, .3, …, the oldest dropped) and a new
// one is started. Used for codehydra.log and audit.jsonl.
package rotate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Defaults of Options.
const (
	DefaultMaxBytes int64 = 10 << 20 // 10 MiB
	DefaultKeep           = 3
)

// Options bound a File. Zero values mean the defaults.
type Options struct {
	// MaxBytes is the size a file may reach; a write that would take it
	// further first rotates. A single write larger than MaxBytes still
	// goes whole into a fresh file, so a line is never split.
	MaxBytes int64
	// Keep is how many rotated files are kept (<path>.1 the newest).
	Keep int
}

// File is a log file (0600 in a 0700 folder) that rotates by size. Each
// Write goes whole into one file, so a caller that writes one line per
// Write never sees a line split across files; writes are serialized, so
// concurrent writers never interleave. The zero File is not usable: use
// Open. A nil *File discards writes.
type File struct {
	path string
	opts Options

	mu     sync.Mutex
	f      *os.File // nil when closed, or when a reopen failed
	size   int64
	closed bool
}

// Open opens path for appending, creating it and its folder as needed.
// A file already over the limit is rotated before the first write.
func Open(path string, opts Options) (*File, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create folder of %s: %w", path, err)
	}
	r := &File{path: path, opts: opts}
	if err := r.openLocked(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *File) openLocked() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", r.path, err)
	}
	// O_CREATE's mode is filtered by the umask and ignored for an existing
	// file; the log is private either way.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("restrict %s: %w", r.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat %s: %w", r.path, err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p in one write, rotating first when p would take the file
// over its limit. After Close it writes nothing and reports no error
// (late log lines of a shutdown are dropped, not failed).
func (r *File) Write(p []byte) (int, error) {
	if r == nil {
		return len(p), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return len(p), nil
	}
	var rotErr error
	if r.f != nil && r.size > 0 && r.size+int64(len(p)) > r.opts.MaxBytes {
		rotErr = r.rotateLocked()
	}
	if r.f == nil {
		if err := r.openLocked(); err != nil {
			return 0, errors.Join(rotErr, err)
		}
	}
	// A failed rotation still writes the line, over the limit: a log
	// that grows is better than one that loses lines.
	n, err := r.f.Write(p)
	r.size += int64(n)
	if err != nil {
		return n, errors.Join(rotErr, fmt.Errorf("write %s: %w", r.path, err))
	}
	return n, rotErr
}

// rotateLocked shifts <path>.i to <path>.i+1 (dropping the last), moves the
// current file to <path>.1 and opens a new one. Each step is a rename, so
// a reader sees every file whole; a failure leaves the current file in
// use rather than losing lines.
func (r *File) rotateLocked() error {
	old := func(i int) string { return r.path + "." + strconv.Itoa(i) }
	if err := os.Remove(old(r.opts.Keep)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate %s: %w", r.path, err)
	}
	for i := r.opts.Keep - 1; i >= 1; i-- {
		if err := os.Rename(old(i), old(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", r.path, err)
		}
	}
	// Close before the rename: Windows refuses to rename an open file.
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("rotate %s: %w", r.path, err)
	}
	renameErr := os.Rename(r.path, old(1))
	if err := r.openLocked(); err != nil {
		r.f = nil
		return errors.Join(renameErr, err)
	}
	if renameErr != nil {
		return fmt.Errorf("rotate %s: %w", r.path, renameErr)
	}
	return nil
}

// Close closes the file; later writes are dropped.
func (r *File) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
