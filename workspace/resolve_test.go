package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	sibling := ws.Path + "2"
	if err := os.Mkdir(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(ws.Path, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	links := realDir(t)
	linkToWS := filepath.Join(links, "to-ws")
	if err := os.Symlink(ws.Path, linkToWS); err != nil {
		t.Fatal(err)
	}
	outside := realDir(t)
	linkOut := filepath.Join(ws.Path, "out")
	if err := os.Symlink(outside, linkOut); err != nil {
		t.Fatal(err)
	}
	linkToSub := filepath.Join(links, "to-sub")
	if err := os.Symlink(sub, linkToSub); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		path string
		code Code // "" = resolves to ws
	}{
		{"exact", ws.Path, ""},
		{"trailing slash", ws.Path + "/", ""},
		{"dot element", ws.Path + "/.", ""},
		{"double slash", strings.Replace(ws.Path, "/", "//", 1), ""},
		{"symlink to the workspace", linkToWS, ""},
		{"dot-dot back into it", ws.Path + "/sub/..", CodeInvalidInput},
		{"dot-dot to a sibling", ws.Path + "/../ws2", CodeInvalidInput},
		{"sibling with a shared prefix", sibling, CodeWorkspaceNotFound},
		{"subfolder", sub, CodeWorkspaceNotFound},
		{"symlink to a subfolder", linkToSub, CodeWorkspaceNotFound},
		{"symlink out of the workspace", linkOut, CodeWorkspaceNotFound},
		{"main checkout", p.Path, CodeWorkspaceNotFound},
		{"missing path", ws.Path + "-missing", CodeWorkspaceNotFound},
		{"under a file", filepath.Join(ws.Path, "README.md", "x"), CodeWorkspaceNotFound},
		{"relative", "ws", CodeInvalidInput},
		{"dot relative", "./ws", CodeInvalidInput},
		{"empty", "", CodeInvalidInput},
		{"NUL", ws.Path + "\x00", CodeInvalidInput},
		{"10 KB", "/" + strings.Repeat("a", 10*1024), CodeInvalidInput},
		{"just over the limit", "/" + strings.Repeat("a", MaxPathLength), CodeInvalidInput},
	}
	for _, tt := range tests {
		got, err := m.Resolve(tt.path)
		if tt.code == "" {
			if err != nil || got != ws {
				t.Errorf("%s: Resolve(%q) = %+v, %v; want %+v", tt.name, tt.path, got, err, ws)
			}
			continue
		}
		if CodeOf(err) != tt.code {
			t.Errorf("%s: Resolve(%q) = %+v, %v (%s); want %s", tt.name, tt.path, got, err, CodeOf(err), tt.code)
		}
	}
}

func TestCheckRequestPathAcceptsNamesWithDots(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/a/...", "/a/..b", "/a/b..", "/a/.hidden"} {
		if err := checkRequestPath(p); err != nil {
			t.Errorf("checkRequestPath(%q) = %v", p, err)
		}
	}
}
