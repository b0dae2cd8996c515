package rotate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// writeLines writes writers×perWriter JSON lines to f from as many
// goroutines, each line one Write, and returns every line's id.
func writeLines(t *testing.T, f *File, writers, perWriter int) map[string]bool {
	t.Helper()
	var wg sync.WaitGroup
	ids := make(map[string]bool)
	for w := range writers {
		for i := range perWriter {
			ids[fmt.Sprintf("%d-%d", w, i)] = true
		}
		wg.Go(func() {
			for i := range perWriter {
				line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("%d-%d", w, i), "pad": "some text to fill the file"})
				if _, err := f.Write(append(line, '\n')); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return ids
}

// readLines returns the ids of the JSON lines in path, failing the test
// on any line that is not one whole JSON object.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var ids []string
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var m map[string]string
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["id"] == "" {
			t.Fatalf("%s: line %q is not a whole entry: %v", path, sc.Text(), err)
		}
		ids = append(ids, m["id"])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestConcurrentWritesRotateWithoutLosingOrSplittingALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log", "audit.jsonl")
	const limit = 2000
	// Enough old files to keep everything, so that every line can be found.
	f, err := Open(path, Options{MaxBytes: limit, Keep: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want := writeLines(t, f, 16, 100)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	files := []string{path}
	for i := 1; ; i++ {
		old := path + "." + strconv.Itoa(i)
		if _, err := os.Stat(old); err != nil {
			break
		}
		files = append(files, old)
	}
	if len(files) < 10 {
		t.Fatalf("%d files for about 100 KB at a %d-byte limit: the log did not rotate", len(files), limit)
	}
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > limit {
			t.Errorf("%s is %d bytes, over the %d limit", p, fi.Size(), limit)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
		for _, id := range readLines(t, p) {
			if seen[id] {
				t.Errorf("line %s written twice", id)
			}
			seen[id] = true
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("line %s lost", id)
		}
	}
}

func TestRotationKeepsABoundedNumberOfOldFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "codehydra.log")
	f, err := Open(path, Options{MaxBytes: 1000, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, f, 8, 100)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"codehydra.log", "codehydra.log.1", "codehydra.log.2", "codehydra.log.3"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	for _, n := range names {
		readLines(t, filepath.Join(dir, n))
	}
}

func TestAFileOverTheLimitAtStartIsRotatedBeforeTheFirstWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codehydra.log")
	big := make([]byte, 3000)
	for i := range big {
		big[i] = 'x'
	}
	big[len(big)-1] = '\n'
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Options{MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Errorf("current file %q, want only the new line", got)
	}
	if got, _ := os.ReadFile(path + ".1"); len(got) != len(big) {
		t.Errorf("old file has %d bytes, want %d", len(got), len(big))
	}
}

func TestALineLargerThanTheLimitIsWrittenWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := Open(path, Options{MaxBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"first line\n", "a line longer than ten bytes\n", "third\n"} {
		if _, err := f.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	for p, want := range map[string]string{path: "third\n", path + ".1": "a line longer than ten bytes\n", path + ".2": "first line\n"} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

func TestWritesAfterCloseAreDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n, err := f.Write([]byte("late\n")); err != nil || n != 5 {
		t.Fatalf("write after close = %d, %v", n, err)
	}
	if got, _ := os.ReadFile(path); len(got) != 0 {
		t.Errorf("file holds %q", got)
	}
}
