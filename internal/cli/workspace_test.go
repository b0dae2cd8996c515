package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func TestWorkspaceCreateSaysThatAnExistingBranchIsReusedWithItsBase(t *testing.T) {
	ri := startRemoteInstance(t)
	testenv.Git(t, ri.project, "branch", "other")
	testenv.Git(t, ri.project, "branch", "kept")
	testenv.Git(t, ri.project, "config", "branch.kept.codehydra.base", "main")

	code, out, errOut := runRemote(t, "workspace", "create", "kept", "--project", ri.project, "--base", "other")
	if code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	for _, want := range []string{
		"created workspace kept at ",
		"note: branch kept already existed and is reused as it is",
		"recorded base main",
		"the base other that was asked for does not apply",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q does not say %q", out, want)
		}
	}
	if got := testenv.Git(t, ri.project, "config", "branch.kept.codehydra.base"); got != "main" {
		t.Errorf("recorded base = %q, want main kept", got)
	}

	code, out, errOut = runRemote(t, "workspace", "create", "fresh", "--project", ri.project, "--json")
	var created struct {
		BranchReused *bool  `json:"branchReused"`
		Note         string `json:"note"`
	}
	if err := json.Unmarshal([]byte(out), &created); code != 0 || err != nil {
		t.Fatalf("create --json: %d %q %q %v", code, out, errOut, err)
	}
	if created.BranchReused != nil || created.Note != "" {
		t.Errorf("a new branch's create says %q", out)
	}
}
