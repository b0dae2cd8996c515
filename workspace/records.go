package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"codehydra/internal/atomicfile"
)

// Records of work in progress (a delete, a merge's ref moves) that a crash
// must not leave half done: one JSON file per workspace, named by a hash
// of its path, in a folder of the project's git common dir. They are
// written atomically, so a record is there whole or not at all.

// recordFile is the file of the record of the workspace at wsPath in the
// folder dir of commonDir.
func recordFile(commonDir, dir, wsPath string) string {
	sum := sha256.Sum256([]byte(pathKey(wsPath)))
	return filepath.Join(commonDir, dir, hex.EncodeToString(sum[:8])+".json")
}

// writeRecord writes v as the record of wsPath.
func writeRecord(commonDir, dir, wsPath string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	return atomicfile.Write(recordFile(commonDir, dir, wsPath), b, 0o600)
}

// removeRecord removes the record of wsPath; a missing one is no error.
func removeRecord(commonDir, dir, wsPath string) error {
	err := os.Remove(recordFile(commonDir, dir, wsPath))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove record: %w", err)
	}
	return nil
}

// readRecords returns the records in the folder dir of commonDir whose
// workspace path (pathOf) is one a request could name and whose file is
// named for it, and that pass valid. The others, and what a crash left of
// a write, are removed: nothing can be done with them.
func readRecords[T any](commonDir, dir string, pathOf func(T) string, valid func(T) bool) ([]T, error) {
	folder := filepath.Join(commonDir, dir)
	entries, err := os.ReadDir(folder)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	var out []T
	for _, e := range entries {
		file := filepath.Join(folder, e.Name())
		if !e.IsDir() && strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			_ = os.Remove(file)
			continue
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(file)
		var rec T
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil || checkRequestPath(pathOf(rec)) != nil || recordFile(commonDir, dir, pathOf(rec)) != file || !valid(rec) {
			_ = os.Remove(file)
			continue
		}
		out = append(out, rec)
	}
	return out, nil
}
