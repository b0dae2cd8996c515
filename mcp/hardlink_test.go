//go:build unix

package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// hardLinkOut puts, at each name of the workspace at ws, a hard link to a
// file of the user's outside it (as a link to ~/.ssh/id_rsa would be),
// holding "hunter2".
func hardLinkOut(t *testing.T, ws string, names ...string) {
	t.Helper()
	const secret = "BEGIN OPENSSH PRIVATE KEY hunter2"
	outside := filepath.Join(t.TempDir(), "id_rsa")
	testenv.WriteFile(t, outside, secret+"\n")
	for _, n := range names {
		_ = os.Remove(filepath.Join(ws, n))
		if err := os.Link(outside, filepath.Join(ws, n)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGetDiffWithholdsAFileWithAnotherNameOutsideTheWorkspace:
// workspace_read_file refuses a file with more than one name, but
// workspace_get_diff showed one: an untracked hard link to a file of the
// user's, or one put in place of a tracked file, had its content in the
// patch. Such a file is now listed withheld, with why, as the deny list's
// files are, and its content is in no patch.
func TestGetDiffWithholdsAFileWithAnotherNameOutsideTheWorkspace(t *testing.T) {
	h := newHarness(t)
	ws := h.create("feat")
	hardLinkOut(t, ws.Path, "notes.txt", "README.md")
	testenv.WriteFile(t, filepath.Join(ws.Path, "plain.txt"), "plain work\n")
	cs := h.sessionAs(h.tokenOf(ws.Path), "")

	d, code, msg := answerOf[workspace.Diff](t, cs, ToolGetDiff, nil)
	if code != "" {
		t.Fatalf("get_diff: %s %s", code, msg)
	}
	if strings.Contains(d.Patch, "hunter2") {
		t.Fatalf("the patch shows the linked file's content:\n%s", d.Patch)
	}
	if !strings.Contains(d.Patch, "+plain work") {
		t.Fatalf("the patch lost the plain file:\n%s", d.Patch)
	}
	for _, name := range []string{"notes.txt", "README.md"} {
		found := false
		for _, f := range d.Files {
			if f.Path == name {
				found = true
				if !f.Withheld || f.Additions != 0 || f.Deletions != 0 || !strings.Contains(f.Why, "3 names (hard links)") {
					t.Errorf("%s is listed as %+v, want withheld, without counts, saying why", name, f)
				}
			}
		}
		if !found {
			t.Errorf("%s is not listed: %+v", name, d.Files)
		}
		one, code, msg := answerOf[workspace.Diff](t, cs, ToolGetDiff, map[string]any{"file": name})
		if code != "" || strings.Contains(one.Patch, "hunter2") || one.Patch != "" {
			t.Errorf("%s asked for alone: %q, %s %s", name, one.Patch, code, msg)
		}
	}
}

// TestConfinedGatewayToolsRefuseAFileWithAnotherName: a confined server
// named, inside the workspace, a hard link to a file of the user's
// outside it, and read that file. A path argument naming an existing
// regular file with more than one name is now refused, saying why, as
// workspace_read_file refuses it.
func TestConfinedGatewayToolsRefuseAFileWithAnotherName(t *testing.T) {
	h, g, a, _, _ := confinedFS(t)
	hardLinkOut(t, a.Path, "notes.txt")
	if err := os.Symlink("notes.txt", filepath.Join(a.Path, "innocent")); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(a.Path, "plain.txt"), "plain")
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	for name, args := range map[string]any{
		"absolute":          map[string]any{"path": filepath.Join(a.Path, "notes.txt")},
		"relative":          map[string]any{"path": "notes.txt"},
		"through a symlink": map[string]any{"path": filepath.Join(a.Path, "innocent")},
		"as a file URI":     map[string]any{"uri": "file://" + filepath.Join(a.Path, "notes.txt")},
		"nested":            map[string]any{"o": map[string]any{"p": []any{filepath.Join(a.Path, "plain.txt"), filepath.Join(a.Path, "notes.txt")}}},
	} {
		wantForbiddenBeforeGateway(t, g, cs, name, "fs__read", args, "2 names (hard links)")
	}
	if res := call(t, cs, "fs__read", map[string]any{"path": filepath.Join(a.Path, "plain.txt")}); res.IsError {
		t.Errorf("a plain file: refused: %s", text(t, res))
	}
}
