package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"codehydra/internal/atomicfile"
)

// A settings file written before relative opencodeBin paths were refused
// may hold one. Moving the whole file aside for it would throw away the
// user's projects and every other setting, so Load drops that one key.

// DroppedKeyError reports a settings file that was valid but for one key,
// which Load removed; every other setting in the file was kept and is in
// use.
type DroppedKeyError struct {
	Path  string
	Key   string
	Value string
	// Backup is a copy of the file as it was, "" when none could be made.
	Backup string
	// WriteErr is why the file could not be rewritten without the key; the
	// settings are then in use without it, but the file still holds it.
	WriteErr error

	original []byte
}

func (e *DroppedKeyError) Error() string {
	msg := fmt.Sprintf("settings file %s: %s %q is a relative path, which is refused (an agent would look for it in its workspace's folder); only that setting was removed and every other one is kept, so opencode is searched on PATH and in the tools folder: set %s to an absolute path in Settings to choose one",
		e.Path, e.Key, e.Value, e.Key)
	if e.Backup != "" {
		msg += "; the file as it was is kept at " + e.Backup
	}
	if e.WriteErr != nil {
		msg += fmt.Sprintf("; the file could not be rewritten (%v), so this repeats at the next start", e.WriteErr)
	}
	return msg
}

func (e *DroppedKeyError) Unwrap() error { return e.WriteErr }

// withoutRelativeBin parses data without its opencodeBin when that is a
// relative path. It returns nil when data has no such key or is still
// not valid without it.
func withoutRelativeBin(path string, data []byte) (Settings, *DroppedKeyError) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil {
		return Settings{}, nil
	}
	var bin string
	if json.Unmarshal(keys["opencodeBin"], &bin) != nil || !relativeBin(bin) {
		return Settings{}, nil
	}
	delete(keys, "opencodeBin")
	rest, err := json.Marshal(keys)
	if err != nil {
		return Settings{}, nil
	}
	s, err := parse(rest)
	if err != nil {
		return Settings{}, nil
	}
	return s, &DroppedKeyError{Path: path, Key: "opencodeBin", Value: bin, original: data}
}

// rewrite keeps a copy of the file as it was (it may hold formatting or
// comments the user wants back) and saves s in its place. It returns e,
// with what failed recorded in it.
func (e *DroppedKeyError) rewrite(s Settings, now time.Time) error {
	backup := badName(e.Path, now)
	f, err := os.OpenFile(backup, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.Write(e.original)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			e.Backup = backup
		} else {
			_ = os.Remove(backup)
		}
	}
	if err != nil {
		// Without a copy the value would be lost with the rewrite; the
		// message names it, but the file stays as it was.
		e.WriteErr = fmt.Errorf("copy settings file before removing %s: %w", e.Key, err)
		return e
	}
	if err := saveWith(atomicfile.Writer{}, e.Path, s); err != nil {
		e.WriteErr = err
	}
	return e
}
