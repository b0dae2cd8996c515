package settings

// The settings file: reading it (a file that cannot be used is moved
// aside, never overwritten) and writing it atomically.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"codehydra/internal/atomicfile"
)

// CorruptError reports a settings file that was not valid JSON or held
// invalid values. The file was moved to MovedTo (if that worked) and the
// settings returned with the error are the defaults.
type CorruptError struct {
	Path    string
	MovedTo string // "" when the file could not be moved
	Err     error
}

func (e *CorruptError) Error() string {
	if e.MovedTo == "" {
		return fmt.Sprintf("settings file %s is not valid (%v); using defaults: fix or delete the file", e.Path, e.Err)
	}
	return fmt.Sprintf("settings file %s is not valid (%v); it was moved to %s and defaults are used: fix it and move it back, or change settings in the app", e.Path, e.Err, e.MovedTo)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Load reads the settings file at path. A missing file gives Default() and
// no error (nothing is written). A file that is not valid JSON or fails
// Validate is moved aside as <path>.bad-<YYYYMMDD-hhmmss> and Load returns
// Default() with a *CorruptError; but a file that is valid except for a
// relative opencodeBin keeps every other setting: Load returns them with a
// *DroppedKeyError and rewrites the file without that key (keeping a copy
// of it as it was). Any other read failure returns Default() with that
// error and leaves the file alone.
func Load(path string) (Settings, error) {
	return load(path, time.Now)
}

func load(path string, now func() time.Time) (Settings, error) {
	s, dropped, invalid, err := read(path)
	if dropped != nil {
		return s, dropped.rewrite(s, now())
	}
	if !invalid {
		return s, err
	}
	cerr := &CorruptError{Path: path, Err: err}
	moved, mvErr := moveAside(path, now())
	if mvErr != nil {
		return Default(), errors.Join(cerr, mvErr)
	}
	cerr.MovedTo = moved
	return Default(), cerr
}

// Read reads the settings file at path as Load does but changes nothing,
// for commands that only look: a file that is not valid settings is left
// where it is, and a relative opencodeBin is ignored without a word (such
// commands start no agent). Whatever the error, the settings returned are
// usable (the defaults when the file was not).
func Read(path string) (Settings, error) {
	s, _, _, err := read(path)
	return s, err
}

// read returns the settings in the file at path, or Default() with no
// error when there is none. invalid reports a file that was read but does
// not hold valid settings; the settings returned are then Default().
// dropped is set when the file is valid but for a relative opencodeBin:
// the settings returned are the file's without it.
func read(path string) (s Settings, dropped *DroppedKeyError, invalid bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil, false, nil
	}
	if err != nil {
		return Default(), nil, false, fmt.Errorf("read settings: %w", err)
	}
	s, err = parse(data)
	if err == nil {
		return s, nil, false, nil
	}
	if s, dropped := withoutRelativeBin(path, data); dropped != nil {
		return s, dropped, false, nil
	}
	return Default(), nil, true, err
}

// parse reads data over the defaults and validates the result.
func parse(data []byte) (Settings, error) {
	s := Default()
	if err := json.Unmarshal(data, &s); err != nil {
		return Settings{}, fmt.Errorf("bad JSON: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// moveAside renames path to badName(path, t).
func moveAside(path string, t time.Time) (string, error) {
	target := badName(path, t)
	if err := os.Rename(path, target); err != nil {
		return "", fmt.Errorf("move bad settings file aside: %w", err)
	}
	return target, nil
}

// badName is path.bad-<time>, with a counter added rather than naming an
// earlier bad file of the same second.
func badName(path string, t time.Time) string {
	base := path + ".bad-" + t.Format("20060102-150405")
	target := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			return target
		}
		target = fmt.Sprintf("%s-%d", base, i)
	}
}

// Save validates s and writes it to path atomically with mode 0600,
// including the unknown keys that were read with it.
func Save(path string, s Settings) error {
	return saveWith(atomicfile.Writer{}, path, s)
}

// saveWith is Save through w (tests simulate a full disk with it).
func saveWith(w atomicfile.Writer, path string, s Settings) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	data = append(data, '\n')
	if err := w.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	return nil
}
