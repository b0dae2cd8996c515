package reap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"codehydra/internal/atomicfile"
)

// RecordPath names the record of the child pid in dir.
func RecordPath(dir string, pid int) string {
	return filepath.Join(dir, strconv.Itoa(pid)+".json")
}

// WriteRecord writes rec, the record of the child pid, to dir (0600,
// atomically: a crash leaves the old record or the new one, never half).
func WriteRecord(dir string, pid int, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the record of process %d: %w", pid, err)
	}
	if err := atomicfile.Write(RecordPath(dir, pid), b, 0o600); err != nil {
		return fmt.Errorf("write the record of process %d: %w", pid, err)
	}
	return nil
}

// RemoveRecord removes the record of the child pid from dir; one that is
// already gone is fine.
func RemoveRecord(dir string, pid int) error {
	err := os.Remove(RecordPath(dir, pid))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the record of process %d: %w", pid, err)
	}
	return nil
}

// ReadRecords reads every record in dir (none if dir does not exist);
// files that cannot be read or name no process past init are returned by
// name in bad, so that they can be removed.
func ReadRecords[T Record](dir string) (recs []T, bad []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the records folder: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, name)
			continue
		}
		var r T
		if json.Unmarshal(b, &r) != nil || r.Proof().PID <= 1 {
			bad = append(bad, name)
			continue
		}
		recs = append(recs, r)
	}
	return recs, bad, nil
}
