package mcp

import (
	"encoding/json"
	"testing"

	"codehydra/internal/testenv"
)

// A project added a second time (here by a path with a trailing slash) is
// answered as already added, so a caller can tell it from a new one.
func TestProjectAddSaysWhenTheProjectIsAlreadyAdded(t *testing.T) {
	h := newHarness(t)
	cs := h.session("")
	repo := testenv.GitRepo(t, "twice")
	for i, tc := range []struct {
		path string
		want bool
	}{{repo, false}, {repo + "/", true}, {h.project, true}} {
		var got map[string]any
		okJSON(t, call(t, cs, ToolProjectAdd, map[string]any{"path": tc.path}), &got)
		already, _ := got["alreadyAdded"].(bool)
		if already != tc.want || got["path"] == nil || got["name"] == nil {
			raw, _ := json.Marshal(got)
			t.Errorf("add %d (%s) answered %s, want alreadyAdded %v with the project", i, tc.path, raw, tc.want)
		}
	}
}
