package mcp

import (
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestGetDiffForOneselfAParentsChildAndTheUserOnly: an agent sees its own
// changes and its children's; a sibling's, another project's, its
// parent's and a folder that is no workspace are one and the same
// refusal; the user sees any. What the deny list refuses is withheld.
func TestGetDiffForOneselfAParentsChildAndTheUserOnly(t *testing.T) {
	f := newFamily(t)
	for _, ws := range []workspace.Workspace{f.a, f.child, f.sibling, f.strange} {
		testenv.WriteFile(t, filepath.Join(ws.Path, "work-of-"+ws.Name+".txt"), "done by "+ws.Name+"\n")
	}
	testenv.WriteFile(t, filepath.Join(f.child.Path, ".env"), "TOKEN=hunter2\n")
	diffOf := func(token, header string, args map[string]any) (workspace.Diff, workspace.Code, string) {
		t.Helper()
		res := call(t, f.h.sessionAs(token, header), ToolGetDiff, args)
		if res.IsError {
			code, msg := errCode(t, res)
			return workspace.Diff{}, code, msg
		}
		var d workspace.Diff
		okJSON(t, res, &d)
		return d, "", ""
	}
	tokA, tokChild := f.h.tokenOf(f.a.Path), f.h.tokenOf(f.child.Path)

	own, code, msg := diffOf(tokA, "", nil)
	if code != "" || len(own.Files) != 1 || own.Files[0].Path != "work-of-featA.txt" || !strings.Contains(own.Patch, "+done by featA") || own.Base != "main" {
		t.Fatalf("A's own diff: %+v %s %s", own, code, msg)
	}

	child, code, msg := diffOf(tokA, "", map[string]any{"workspace": f.child.Path})
	if code != "" || !strings.Contains(child.Patch, "+done by child") || strings.Contains(child.Patch, "featA") {
		t.Fatalf("A on its child: %+v %s %s", child, code, msg)
	}
	if strings.Contains(child.Patch, "hunter2") {
		t.Fatalf("the child's .env reached the patch:\n%s", child.Patch)
	}
	withheld := false
	for _, fc := range child.Files {
		withheld = withheld || fc.Path == ".env" && fc.Withheld && fc.Additions == 0
	}
	if !withheld {
		t.Fatalf("the child's .env is not listed as withheld: %+v", child.Files)
	}

	var refusal string
	for name, target := range map[string]string{
		"a sibling":              f.sibling.Path,
		"another project's":      f.strange.Path,
		"a folder, no workspace": t.TempDir(),
	} {
		_, code, msg := diffOf(tokA, "", map[string]any{"workspace": target})
		msg = strings.ReplaceAll(msg, target, "<path>")
		if code != workspace.CodeForbidden || refusal != "" && msg != refusal {
			t.Errorf("A on %s: %s %q, want the one forbidden answer %q", name, code, msg, refusal)
		}
		refusal = msg
	}
	if _, code, _ := diffOf(tokChild, "", map[string]any{"workspace": f.a.Path}); code != workspace.CodeForbidden {
		t.Errorf("a child on its parent: %s, want forbidden", code)
	}
	if _, code, _ := diffOf(tokA, "", map[string]any{"workspace": "relative/path"}); code != workspace.CodeInvalidInput {
		t.Errorf("a relative path: %s, want invalid-input", code)
	}

	user, code, msg := diffOf(f.h.token.Value(), f.a.Path, map[string]any{"workspace": f.sibling.Path})
	if code != "" || !strings.Contains(user.Patch, "+done by sibling") {
		t.Fatalf("the user on a sibling: %+v %s %s", user, code, msg)
	}
}
