//go:build unix

package opencode

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestAnAgentGetsItsWorkspacesPortBlock pins docs/DESIGN.md "What agents
// get": CODEHYDRA_PORT, CODEHYDRA_PORTS and PORT from the block recorded
// for the workspace, over an inherited PORT.
func TestAnAgentGetsItsWorkspacesPortBlock(t *testing.T) {
	f := newFixture(t, "PORT=3000")
	dump := filepath.Join(f.dir, "env.json")
	f.env = append(f.env, "FAKEOC_ENV_FILE="+dump)
	main := testenv.GitRepo(t, "project")
	wt := filepath.Join(filepath.Dir(main), "feature")
	testenv.Git(t, main, "worktree", "add", "-q", "-b", "feature", wt)
	if err := workspace.RecordPorts(wt, workspace.PortBlock{First: 20030, Count: 2}); err != nil {
		t.Fatal(err)
	}
	s := f.start(f.options())
	s.Start(workspace.Workspace{Name: "feature", Branch: "feature", Path: wt, ProjectPath: main})
	waitState(t, s, wt, workspace.AgentStateReady, 10*time.Second)

	env := readEnvDump(t, dump).Env
	for key, want := range map[string]string{"CODEHYDRA_PORT": "20030", "CODEHYDRA_PORTS": "20030,20031", "PORT": "20030"} {
		if got := envValues(env, key); !slices.Equal(got, []string{want}) {
			t.Errorf("%s = %q, want exactly [%s]", key, got, want)
		}
	}
}
