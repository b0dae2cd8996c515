package workspace

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// wantOff fails unless the servers switched off for the workspace at path
// are want (comma-separated), both through MCPServersOff and in its
// Metadata.
func wantOff(t *testing.T, m *Manager, path, want, when string) {
	t.Helper()
	ctx := context.Background()
	got, err := m.MCPServersOff(ctx, path)
	if err != nil || strings.Join(got, ",") != want {
		t.Fatalf("%s: servers off = %q, %v; want %q", when, got, err, want)
	}
	md, err := m.Metadata(ctx, path)
	if err != nil || md[MetadataMCPOff] != want {
		t.Fatalf("%s: metadata %s = %q, %v; want %q", when, MetadataMCPOff, md[MetadataMCPOff], err, want)
	}
}

// The switch-off belongs to the worktree: an agent that checks out
// another branch there (a new one, one of the user's, or a detached HEAD)
// keeps it, and the sibling that checks out the first branch does not
// inherit it.
func TestASwitchOffHoldsWhateverTheWorktreeChecksOut(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a, b := create(t, m, p, "mcp-hold-a"), create(t, m, p, "mcp-hold-b")
	ctx := context.Background()
	if err := m.SetMCPServerOff(ctx, a.Path, "fs", true); err != nil {
		t.Fatal(err)
	}
	wantOff(t, m, a.Path, "fs", "switched off")

	testenv.Git(t, a.Path, "checkout", "-q", "-b", "escape")
	wantOff(t, m, a.Path, "fs", "after checking out a new branch")
	testenv.Git(t, p.Path, "branch", "users")
	testenv.Git(t, a.Path, "checkout", "-q", "users")
	wantOff(t, m, a.Path, "fs", "after checking out a branch of the user's")
	testenv.Git(t, a.Path, "checkout", "-q", "--detach")
	wantOff(t, m, a.Path, "fs", "on a detached HEAD")
	if err := m.SetMCPServerOff(ctx, a.Path, "db", true); err != nil {
		t.Fatalf("switching on a detached HEAD: %v", err)
	}
	wantOff(t, m, a.Path, "db,fs", "switched db off on a detached HEAD")

	// b takes the branch a was made on: nothing of a's comes with it.
	testenv.Git(t, b.Path, "checkout", "-q", "mcp-hold-a")
	wantOff(t, m, b.Path, "", "b on a's first branch")
	// Nor can an agent put it on a branch through metadata.
	if err := m.SetMetadata(ctx, b.Path, MetadataMCPOff, ptr("")); CodeOf(err) != CodeForbidden {
		t.Fatalf("SetMetadata(mcpoff) = %v, want forbidden", err)
	}
}

// Deleting a workspace removes its switch-off, so that a workspace made
// again at its path starts with every server on.
func TestASwitchOffGoesWithItsWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a := create(t, m, p, "mcp-gone")
	ctx := context.Background()
	if err := m.SetMCPServerOff(ctx, a.Path, "fs", true); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, a.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", p.Path, "config", "--local", "--get-regexp", `^codehydra-worktree\.`).CombinedOutput(); err == nil {
		t.Fatalf("the project's config still holds the deleted worktree's records:\n%s", out)
	}
	again := create(t, m, p, "mcp-gone")
	if again.Path != a.Path {
		t.Fatalf("made again at %s, want %s", again.Path, a.Path)
	}
	wantOff(t, m, again.Path, "", "made again at the same path")
}

// A switch-off that an earlier CodeHydra kept in the branch's metadata is
// moved to the worktree the first time it is read, joined to what the
// worktree has, and then holds like any other.
func TestASwitchOffKeptOnTheBranchMovesToTheWorktreeOnce(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a := create(t, m, p, "mcp-old")
	ctx := context.Background()
	if err := m.SetMCPServerOff(ctx, a.Path, "db", true); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, p.Path, "config", "branch.mcp-old.codehydra.mcpoff", "fs,gh")
	wantOff(t, m, a.Path, "db,fs,gh", "read once")
	if out, err := exec.Command("git", "-C", p.Path, "config", "--local", "--get", "branch.mcp-old.codehydra.mcpoff").CombinedOutput(); err == nil {
		t.Fatalf("the branch still holds %s", out)
	}
	if v := testenv.Git(t, p.Path, "config", "--get", worktreeVar(a.Path, MetadataMCPOff)); v != "db,fs,gh" {
		t.Fatalf("the worktree's record is %q", v)
	}
	testenv.Git(t, a.Path, "checkout", "-q", "-b", "mcp-old-2")
	wantOff(t, m, a.Path, "db,fs,gh", "after checking out another branch")
	if err := m.SetMCPServerOff(ctx, a.Path, "gh", false); err != nil {
		t.Fatal(err)
	}
	wantOff(t, m, a.Path, "db,fs", "gh switched on")
}
