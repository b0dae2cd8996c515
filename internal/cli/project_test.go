package cli

import (
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func TestProjectAddTwiceSaysTheProjectIsAlreadyAdded(t *testing.T) {
	ri := startRemoteInstance(t)
	second := testenv.GitRepo(t, "second")

	code, out, errOut := runRemote(t, "project", "add", second)
	if code != 0 || !strings.HasPrefix(out, "added project second") {
		t.Fatalf("first add: %d %q %q", code, out, errOut)
	}
	for _, path := range []string{second, ri.project} {
		code, out, errOut = runRemote(t, "project", "add", path)
		if code != 0 || !strings.Contains(out, "already added; nothing changed") || !strings.Contains(out, path) || strings.Contains(out, "added project") {
			t.Errorf("add %s again: %d %q %q; want it said to be already added", path, code, out, errOut)
		}
	}
	if n := len(ri.mgr.Projects()); n != 2 {
		t.Fatalf("manager has %d projects, want 2", n)
	}
}
