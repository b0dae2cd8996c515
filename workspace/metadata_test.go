package workspace

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func ptr(s string) *string { return &s }

func TestMetadataSetGetDelete(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "feature/md")
	ctx := context.Background()
	ev := record(t, m)

	values := map[string]string{
		"note":   "hello world",
		"pr-url": "https://example.com/pr/1?x=1&y=2#frag",
		"dash":   "-v --flag",
		"quotes": `a "quoted" \ back; # not a comment`,
		"spaces": "  padded  ",
		"empty":  "",
		"emoji":  "ready 🎉",
	}
	for k, v := range values {
		if err := m.SetMetadata(ctx, ws.Path, k, ptr(v)); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
	}
	got, err := m.Metadata(ctx, ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(values)
	want["base"] = "main"
	if !maps.Equal(got, want) {
		t.Fatalf("metadata = %q\nwant       %q", got, want)
	}
	// Stored where docs/DESIGN.md says, in the project's config.
	if v := testenv.Git(t, p.Path, "config", "--get", "branch.feature/md.codehydra.note"); v != "hello world" {
		t.Fatalf("git config has %q", v)
	}

	if err := m.SetMetadata(ctx, ws.Path, "note", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.SetMetadata(ctx, ws.Path, "never-set", nil); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	got, _ = m.Metadata(ctx, ws.Path)
	if _, ok := got["note"]; ok {
		t.Fatalf("note still there: %v", got)
	}
	ev.waitFor(t, soon, "metadata-changed", func(e Event) bool {
		return e.Kind == EventMetadataChanged && e.Workspace.Path == ws.Path && e.ProjectPath == p.Path
	})
	ev.sync(t, m)
	n := 0
	for _, e := range ev.all() {
		if e.Kind == EventMetadataChanged {
			n++
		}
	}
	if n < len(values)+1 {
		t.Errorf("%d metadata-changed events, want one per change", n)
	}
}

func TestMetadataKeysAreCaseInsensitiveAndReportedLowercased(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "case")
	ctx := context.Background()
	if err := m.SetMetadata(ctx, ws.Path, "Foo", ptr("upper")); err != nil {
		t.Fatal(err)
	}
	got, _ := m.Metadata(ctx, ws.Path)
	if got["foo"] != "upper" {
		t.Fatalf("metadata = %v, want foo=upper", got)
	}
	if _, ok := got["Foo"]; ok {
		t.Fatalf("metadata reports the key as given: %v", got)
	}
	if err := m.SetMetadata(ctx, ws.Path, "foo", ptr("lower")); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Metadata(ctx, ws.Path); got["foo"] != "lower" || len(got) != 2 {
		t.Fatalf("metadata = %v, want foo=lower overwriting Foo", got)
	}
	if err := m.SetMetadata(ctx, ws.Path, "FOO", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Metadata(ctx, ws.Path); len(got) != 1 {
		t.Fatalf("metadata = %v, want only base", got)
	}
	if err := m.SetMetadata(ctx, ws.Path, "BASE", nil); CodeOf(err) != CodeInvalidInput {
		t.Fatalf("deleting BASE: %v", err)
	}
}

func TestSetMetadataValidation(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "v")
	long := strings.Repeat("x", MaxMetadataValueLength+1)
	tests := []struct {
		name  string
		key   string
		value *string
		code  Code
	}{
		{"empty key", "", ptr("x"), CodeInvalidInput},
		{"key with dot", "a.b", ptr("x"), CodeInvalidInput},
		{"key with underscore", "a_b", ptr("x"), CodeInvalidInput},
		{"key starting with digit", "1a", ptr("x"), CodeInvalidInput},
		{"key too long", strings.Repeat("k", MaxMetadataKeyLength+1), ptr("x"), CodeInvalidInput},
		{"value with newline", "k", ptr("a\nb"), CodeInvalidInput},
		{"value with carriage return", "k", ptr("a\rb"), CodeInvalidInput},
		{"value with NUL", "k", ptr("a\x00b"), CodeInvalidInput},
		{"value too long", "k", &long, CodeInvalidInput},
		{"delete base", "base", nil, CodeInvalidInput},
		{"empty base", "base", ptr(""), CodeInvalidInput},
		{"option as base", "base", ptr("--all"), CodeInvalidInput},
		{"longest key", strings.Repeat("k", MaxMetadataKeyLength), ptr("ok"), ""},
		{"longest value", "k", ptr(strings.Repeat("v", MaxMetadataValueLength)), ""},
	}
	for _, tt := range tests {
		err := m.SetMetadata(context.Background(), ws.Path, tt.key, tt.value)
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.code != "" && CodeOf(err) != tt.code:
			t.Errorf("%s: got %v (%s), want %s", tt.name, err, CodeOf(err), tt.code)
		}
	}
	got, _ := m.Metadata(context.Background(), ws.Path)
	if got["k"] != strings.Repeat("v", MaxMetadataValueLength) || got["base"] != "main" {
		t.Fatalf("metadata after validation = %d keys, base %q", len(got), got["base"])
	}
}

func TestMetadataBaseFallsBackToTheDefaultBase(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	wt := filepath.Join(realDir(t), "outside")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "outside", wt)
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	got, err := m.Metadata(context.Background(), wt)
	if err != nil || !maps.Equal(got, map[string]string{"base": "main"}) {
		t.Fatalf("metadata = %v, %v", got, err)
	}
}

func TestMetadataOfADetachedWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	wt := filepath.Join(realDir(t), "detached")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "--detach", wt)
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	got, err := m.Metadata(context.Background(), wt)
	if err != nil || got["base"] != "main" {
		t.Fatalf("metadata = %v, %v", got, err)
	}
	err = m.SetMetadata(context.Background(), wt, "note", ptr("x"))
	wantCode(t, err, CodeInvalidInput)
	if !strings.Contains(err.Error(), "detached HEAD") {
		t.Fatalf("error %q does not explain", err)
	}
}

func TestMetadataFollowsABranchSwitchedInTheWorktree(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "first")
	testenv.Git(t, ws.Path, "checkout", "-q", "-b", "second")
	if err := m.SetMetadata(context.Background(), ws.Path, "note", ptr("on second")); err != nil {
		t.Fatal(err)
	}
	if v := testenv.Git(t, p.Path, "config", "--get", "branch.second.codehydra.note"); v != "on second" {
		t.Fatalf("branch.second note = %q", v)
	}
}

func TestSetMetadataWithTheConfigLockedSaysWhichFile(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "locked")
	lock := filepath.Join(p.Path, ".git", "config.lock")
	testenv.WriteFile(t, lock, "")
	err := m.SetMetadata(context.Background(), ws.Path, "note", ptr("x"))
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "another git process holds "+lock+"; try again when it finishes") {
		t.Fatalf("error %q", err)
	}
}

func TestMetadataOfAnUnknownWorkspaceIsNotFound(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	_, err := m.Metadata(context.Background(), filepath.Join(p.Path, "nope"))
	wantCode(t, err, CodeWorkspaceNotFound)
	wantCode(t, m.SetMetadata(context.Background(), p.Path, "k", ptr("v")), CodeWorkspaceNotFound)
}

func TestMCPServersSwitchedOffAreTheUsersOnlyAndPerWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a, b := create(t, m, p, "mcp-a"), create(t, m, p, "mcp-b")
	ctx := context.Background()
	for _, name := range []string{"fs", "db", "fs"} {
		if err := m.SetMCPServerOff(ctx, a.Path, name, true); err != nil {
			t.Fatalf("switch %s off: %v", name, err)
		}
	}
	if got, err := m.MCPServersOff(ctx, a.Path); err != nil || strings.Join(got, ",") != "db,fs" {
		t.Fatalf("a's servers off = %v, %v; want db and fs", got, err)
	}
	if got, _ := m.MCPServersOff(ctx, b.Path); len(got) != 0 {
		t.Fatalf("b's servers off = %v, want none", got)
	}
	if err := m.SetMCPServerOff(ctx, a.Path, "fs", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.MCPServersOff(ctx, a.Path); strings.Join(got, ",") != "db" {
		t.Fatalf("a's servers off after fs came back = %v, want db", got)
	}
	for _, key := range []string{"mcpoff", "MCPOff"} {
		for _, v := range []*string{ptr(""), nil} {
			if err := m.SetMetadata(ctx, a.Path, key, v); CodeOf(err) != CodeForbidden {
				t.Fatalf("SetMetadata(%s, %v) = %v, want forbidden", key, v, err)
			}
		}
	}
	if err := m.SetMCPServerOff(ctx, a.Path, "a,b", true); CodeOf(err) != CodeInvalidInput {
		t.Fatalf("a name with a comma: %v", err)
	}
}
