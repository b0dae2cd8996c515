package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// diffFixture is a workspace with a commit of its own, an uncommitted
// change, an untracked file, a deleted file, a binary file and an ignored
// one, against a base that moved on after it branched.
func diffFixture(t *testing.T) (*Manager, Workspace) {
	t.Helper()
	m, p := setup(t)
	testenv.CommitFile(t, p.Path, "gone.txt", "bye\n", "a file to delete")
	testenv.CommitFile(t, p.Path, ".gitignore", "*.log\n", "ignore logs")
	ws := create(t, m, p, "ws")
	testenv.CommitFile(t, p.Path, "later.txt", "on main after the branch\n", "main moves on")
	testenv.CommitFile(t, ws.Path, "committed.txt", "one\ntwo\n", "the agent's commit")
	testenv.WriteFile(t, filepath.Join(ws.Path, "committed.txt"), "one\ntwo\nthree\n")
	testenv.WriteFile(t, filepath.Join(ws.Path, "untracked.txt"), "new\n")
	testenv.WriteFile(t, filepath.Join(ws.Path, "build.log"), "ignored\n")
	if err := os.WriteFile(filepath.Join(ws.Path, "image.bin"), []byte{0, 1, 2, 0, 255}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws.Path, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	return m, ws
}

func TestDiffCoversCommitsUncommittedAndUntrackedFilesAndTouchesNothing(t *testing.T) {
	t.Parallel()
	m, ws := diffFixture(t)
	before := testenv.Git(t, ws.Path, "status", "--porcelain=v1", "-z")
	index := strings.TrimSpace(testenv.Git(t, ws.Path, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	indexBefore, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}

	d, err := m.Diff(context.Background(), ws.Path, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Base != "main" || d.MergeBase == "" {
		t.Fatalf("base %q, merge-base %q", d.Base, d.MergeBase)
	}
	want := map[string]FileChange{
		"committed.txt": {Path: "committed.txt", Status: "added", Additions: 3},
		"untracked.txt": {Path: "untracked.txt", Status: "added", Additions: 1},
		"gone.txt":      {Path: "gone.txt", Status: "deleted", Deletions: 1},
		"image.bin":     {Path: "image.bin", Status: "added", Binary: true},
	}
	if len(d.Files) != len(want) {
		t.Fatalf("files %+v, want %v", d.Files, want)
	}
	for _, f := range d.Files {
		if f != want[f.Path] {
			t.Errorf("file %+v, want %+v", f, want[f.Path])
		}
	}
	for _, s := range []string{"+three", "+new", "-bye", "Binary files /dev/null and b/image.bin differ"} {
		if !strings.Contains(d.Patch, s) {
			t.Errorf("the patch has no %q:\n%s", s, d.Patch)
		}
	}
	for _, s := range []string{"later.txt", "build.log", "\x00\x01\x02"} {
		if strings.Contains(d.Patch, s) {
			t.Errorf("the patch holds %q, which is not the workspace's change:\n%s", s, d.Patch)
		}
	}
	if d.Offset != 0 || d.NextOffset != 0 || d.TotalBytes != len(d.Patch) {
		t.Errorf("one page: offset %d, next %d, total %d, len %d", d.Offset, d.NextOffset, d.TotalBytes, len(d.Patch))
	}

	if after := testenv.Git(t, ws.Path, "status", "--porcelain=v1", "-z"); after != before {
		t.Errorf("the workspace's status changed:\nbefore %q\nafter  %q", before, after)
	}
	if indexAfter, err := os.ReadFile(index); err != nil || string(indexAfter) != string(indexBefore) {
		t.Errorf("the workspace's index changed (%v)", err)
	}
}

func TestDiffComesInPagesThatMakeTheWholePatch(t *testing.T) {
	t.Parallel()
	m, ws := diffFixture(t)
	ctx := context.Background()
	whole, err := m.Diff(ctx, ws.Path, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	offset, pages := 0, 0
	for {
		d, err := m.Diff(ctx, ws.Path, DiffOptions{Offset: offset, MaxBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Patch) > 100 || d.TotalBytes != whole.TotalBytes || d.Offset != offset {
			t.Fatalf("page at %d: %d bytes, total %d (want at most 100, %d)", offset, len(d.Patch), d.TotalBytes, whole.TotalBytes)
		}
		joined.WriteString(d.Patch)
		pages++
		if d.NextOffset == 0 {
			break
		}
		if d.NextOffset != offset+len(d.Patch) {
			t.Fatalf("next offset %d after %d bytes from %d", d.NextOffset, len(d.Patch), offset)
		}
		offset = d.NextOffset
	}
	if joined.String() != whole.Patch || pages < 2 {
		t.Fatalf("%d pages joined do not make the patch", pages)
	}
	past, err := m.Diff(ctx, ws.Path, DiffOptions{Offset: whole.TotalBytes + 10})
	if err != nil || past.Patch != "" || past.NextOffset != 0 {
		t.Fatalf("a page past the end: %+v, %v", past, err)
	}
}

func TestDiffOfOneFileAndBadRequests(t *testing.T) {
	t.Parallel()
	m, ws := diffFixture(t)
	ctx := context.Background()
	d, err := m.Diff(ctx, ws.Path, DiffOptions{File: "untracked.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Patch, "+new") || strings.Contains(d.Patch, "committed.txt") || len(d.Files) != 4 {
		t.Fatalf("one file's patch:\n%s\nfiles %+v", d.Patch, d.Files)
	}
	for _, o := range []DiffOptions{
		{File: "../outside.txt"}, {File: "/etc/passwd"}, {File: ".."}, {File: "a\x00b"},
		{MaxBytes: MaxDiffBytes + 1}, {MaxBytes: -1}, {Offset: -1},
	} {
		if _, err := m.Diff(ctx, ws.Path, o); CodeOf(err) != CodeInvalidInput {
			t.Errorf("%+v: %v, want invalid-input", o, err)
		}
	}
	if _, err := m.Diff(ctx, filepath.Join(t.TempDir(), "nowhere"), DiffOptions{}); CodeOf(err) != CodeWorkspaceNotFound {
		t.Errorf("a folder that is no workspace: %v", err)
	}
}

func TestPageWriterKeepsOnlyItsPage(t *testing.T) {
	w := &pageWriter{from: 3, max: 4}
	for _, s := range []string{"ab", "cdef", "ghij"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if w.buf.String() != "defg" || w.total != 10 {
		t.Fatalf("page %q of %d bytes, want defg of 10", w.buf.String(), w.total)
	}
}

func TestDiffWithholdsWhatItIsTold(t *testing.T) {
	t.Parallel()
	m, ws := diffFixture(t)
	testenv.WriteFile(t, filepath.Join(ws.Path, ".env"), "SECRET=hunter2\n")
	withhold := func(p string) string {
		if p == ".env" {
			return "a secret"
		}
		return ""
	}
	d, err := m.Diff(context.Background(), ws.Path, DiffOptions{Withhold: withhold})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.Patch, "hunter2") || strings.Contains(d.Patch, ".env") {
		t.Fatalf("the patch shows a withheld file:\n%s", d.Patch)
	}
	if !strings.Contains(d.Patch, "+new") {
		t.Fatalf("the patch lost the other files:\n%s", d.Patch)
	}
	found := false
	for _, f := range d.Files {
		if f.Path == ".env" {
			found = f == FileChange{Path: ".env", Status: "added", Withheld: true, Why: "a secret"}
		}
	}
	if !found {
		t.Fatalf("the withheld file is not listed as withheld: %+v", d.Files)
	}
	if one, err := m.Diff(context.Background(), ws.Path, DiffOptions{File: ".env", Withhold: withhold}); err != nil || one.Patch != "" {
		t.Fatalf("asked for alone, a withheld file: %q, %v", one.Patch, err)
	}
}
