package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// tree makes the files and folders (a trailing / makes a folder) under a
// new temporary folder and returns it.
func tree(t *testing.T, entries ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(root, e)
		if strings.HasSuffix(e, "/") {
			err = os.MkdirAll(p, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte(e), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// planned skips a test of the rules and grants a policy is made of on a
// system without a sandbox (Supported is false): they are Landlock's, in
// Linux's paths, and there Plan never makes a policy (no probe enforces).
func planned(t *testing.T) {
	t.Helper()
	if !Supported {
		t.Skipf("no sandbox on %s: Plan makes no policy here (its rules and grants are Linux's Landlock's)", runtime.GOOS)
	}
}

func ruleStrings(root string, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		rel, _ := filepath.Rel(root, r.Path)
		if r.Dir {
			rel += "/"
		}
		out = append(out, r.Access.String()+" "+rel)
	}
	slices.Sort(out)
	return out
}

func TestExpandCutsHolesLevelByLevelAndKeepsExceptionsInsideThem(t *testing.T) {
	planned(t)
	root := tree(t, "home/.bashrc", "home/src/app/main.go", "home/.local/share/codehydra/token",
		"home/.local/share/codehydra/projects/p/workspaces/a/x", "home/.local/share/codehydra/projects/p/workspaces/b/secret",
		"home/.local/share/opencode/auth.json", "home/.local/state/", "etc/passwd")
	if err := os.Symlink(filepath.Join(root, "home/.local/share/codehydra"), filepath.Join(root, "home/link")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	private := filepath.Join(home, ".local/share/codehydra")
	wsA := filepath.Join(private, "projects/p/workspaces/a")
	p := Policy{
		Grants: []Grant{{Path: root, Access: Read}, {Path: wsA, Access: Write}, {Path: filepath.Join(home, "missing"), Access: Write}},
		Deny:   []string{private, filepath.Join(home, ".ssh")},
	}
	rules, err := Expand(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"read etc/", "read home/.bashrc", "read home/.local/share/opencode/", "read home/.local/state/", "read home/src/",
		"write home/.local/share/codehydra/projects/p/workspaces/a/",
	}
	if got := ruleStrings(root, rules); !slices.Equal(got, want) {
		t.Errorf("rules =\n%q\nwant\n%q", got, want)
	}
	for _, tc := range []struct {
		path   string
		access Access
		want   bool
	}{
		{filepath.Join(home, ".bashrc"), Read, true},
		{filepath.Join(home, ".bashrc"), Write, false},
		{home, Read, false}, // on the way to a hole: only its entries
		{filepath.Join(private, "token"), Read, false},
		{filepath.Join(private, "projects/p/workspaces/b/secret"), Read, false},
		{filepath.Join(wsA, "x"), Write, true},
		{filepath.Join(home, ".ssh/id_ed25519"), Read, false},
	} {
		if got := p.Allows(tc.path, tc.access); got != tc.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", tc.path, tc.access, got, tc.want)
		}
	}
}

func TestExpandRefusesRelativePaths(t *testing.T) {
	for _, p := range []Policy{
		{Grants: []Grant{{Path: "rel", Access: Read}}},
		{Grants: []Grant{{Path: "/a/../b", Access: Read}}},
		{Grants: []Grant{{Path: "/", Access: Read}}, Deny: []string{"x"}},
		{Grants: []Grant{{Path: "/", Access: 0}}},
	} {
		if _, err := Expand(p); err == nil {
			t.Errorf("Expand(%+v) took it", p)
		}
	}
}

func TestLayoutForGrantsTheWorkspaceAndCutsOutTheRest(t *testing.T) {
	planned(t)
	root := tree(t, "home/.config/codehydra/settings.json", "home/.local/share/codehydra/tools/opencode",
		"home/.local/share/codehydra/opencode/codehydra-mcp.json", "home/.local/share/codehydra/tmp/a/",
		"home/.local/share/codehydra/projects/p/workspaces/a/f", "home/.local/share/codehydra/projects/p/workspaces/b/f",
		"home/repo/.git/config", "home/repo/.git/hooks/", "home/repo/.git/objects/", "home/repo/.git/refs/", "home/repo/.git/logs/",
		"home/repo/.git/worktrees/a/HEAD", "home/repo/.git/worktrees/b/HEAD", "home/.cache/go-build/", "home/.ssh/id_rsa")
	home := filepath.Join(root, "home")
	data := filepath.Join(home, ".local/share/codehydra")
	l := Layout{
		Private:    []string{filepath.Join(home, ".config/codehydra"), data},
		SharedRead: []string{filepath.Join(data, "tools"), filepath.Join(data, "opencode/codehydra-mcp.json")},
		Writable:   Existing(filepath.Join(home, ".cache"), filepath.Join(home, ".npm")),
		Hidden:     []string{filepath.Join(home, ".ssh")},
	}
	common := filepath.Join(home, "repo/.git")
	w := Workspace{
		Path: filepath.Join(data, "projects/p/workspaces/a"), GitDir: filepath.Join(common, "worktrees/a"), CommonDir: common,
		Temp: filepath.Join(data, "tmp/a"), Others: []string{filepath.Join(data, "projects/p/workspaces/b")},
	}
	p := l.For(w)
	for _, tc := range []struct {
		rel    string
		access Access
		want   bool
	}{
		{".local/share/codehydra/projects/p/workspaces/a/f", Write, true},
		{".local/share/codehydra/projects/p/workspaces/b/f", Read, false},
		{".local/share/codehydra/tmp/a/x", Write, true},
		{".local/share/codehydra/tools/opencode", Read, true},
		{".local/share/codehydra/tools/opencode", Write, false},
		{".local/share/codehydra/opencode/codehydra-mcp.json", Read, true},
		{".config/codehydra/settings.json", Read, false},
		{"repo/.git/config", Read, true},
		{"repo/.git/config", Write, false},
		{"repo/.git/hooks/pre-commit", Write, false},
		{"repo/.git/objects/ab/cd", Write, true},
		{"repo/.git/refs/heads/a", Write, true},
		{"repo/.git/worktrees/a/index", Write, true},
		{"repo/.git/worktrees/b/HEAD", Write, false},
		{".cache/go-build/x", Write, true},
		{".ssh/id_rsa", Read, false},
		{"repo/main.go", Read, true},
		{"repo/main.go", Write, false},
	} {
		if got := p.Allows(filepath.Join(home, tc.rel), tc.access); got != tc.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", tc.rel, tc.access, got, tc.want)
		}
	}
	if p.Allows("/dev/null", Device) != true || p.Allows("/etc/passwd", Read) != true || p.Allows("/etc/passwd", Write) {
		t.Errorf("system grants wrong: %+v", p.Grants)
	}
	// The git folders are written without links: GitWrite, not Write.
	for _, g := range p.Grants {
		if strings.HasPrefix(g.Path, common) && g.Access != GitWrite {
			t.Errorf("grant %s has %s, want %s", g.Path, g.Access, GitWrite)
		}
	}
}

func TestConfinerPlansByModeAndWhatTheSystemCanDo(t *testing.T) {
	ws := t.TempDir()
	temp := filepath.Join(t.TempDir(), "tmp")
	describe := func(_ context.Context, path string) (Workspace, error) {
		return Workspace{Path: path, Temp: temp}, nil
	}
	can := func() Status { return Status{Enforced: true, ABI: 7} }
	cannot := func() Status { return Status{Reason: "not confined: not supported on this system"} }
	for _, tc := range []struct {
		name       string
		mode       Mode
		probe      func() Status
		wantPolicy bool
		wantErr    string
		wantReason string
	}{
		{"auto where the kernel can", ModeAuto, can, true, "", ""},
		{"required where the kernel can", ModeRequired, can, true, "", ""},
		{"auto where it cannot", ModeAuto, cannot, false, "", "not confined: not supported on this system"},
		{"required where it cannot", ModeRequired, cannot, false, `not confined: not supported on this system, and the settings require the sandbox (sandbox mode "required")`, ""},
		{"off", ModeOff, can, false, "", "not confined: the sandbox is off in the settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantPolicy {
				planned(t)
			}
			c := &Confiner{Mode: tc.mode, Workspace: describe, Probe: tc.probe}
			plan, err := c.Plan(context.Background(), ws)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (plan.Policy != nil) != tc.wantPolicy || plan.Status.Reason != tc.wantReason {
				t.Fatalf("plan = %+v", plan)
			}
			if tc.wantPolicy {
				if !plan.Status.Enforced || !slices.Equal(plan.Env, []string{"TMPDIR=" + temp}) {
					t.Errorf("plan = %+v, want enforced with TMPDIR %s", plan, temp)
				}
				if fi, err := os.Stat(temp); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("temporary folder: %v, %v; want made 0700", fi, err)
				}
				if !plan.Policy.Allows(filepath.Join(ws, "f"), Write) || !plan.Policy.Allows(filepath.Join(temp, "f"), Write) {
					t.Errorf("policy grants neither the workspace nor its temporary folder: %+v", plan.Policy)
				}
			}
		})
	}
}

func TestLayoutCheckRefusesWorkspacesThatWouldWriteWhatTheyMustNot(t *testing.T) {
	root := tree(t, "home/.ssh/", "home/src/wt/feat/", "home/.config/codehydra/", "data/codehydra/projects/p/workspaces/a/",
		"data/codehydra/state/", "other/ws/")
	home := filepath.Join(root, "home")
	data := filepath.Join(root, "data/codehydra")
	l := Layout{Home: home, WorktreeRoots: []string{filepath.Join(data, "projects")},
		Private: []string{filepath.Join(home, ".config/codehydra"), data}, Hidden: []string{filepath.Join(home, ".ssh")}}
	others := []string{filepath.Join(root, "other/ws")}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(data, "projects/p/workspaces/a"), true},
		{filepath.Join(home, "src/wt/feat"), true},
		{"/", false},
		{home, false},
		{root, false}, // holds the home folder
		{filepath.Join(home, ".config/codehydra"), false},
		{filepath.Join(home, ".config"), false}, // holds CodeHydra's config
		{filepath.Join(data, "state"), false},   // inside CodeHydra's data, not where worktrees go
		{filepath.Join(data, "projects"), false},
		{filepath.Join(home, ".ssh"), false},
		{filepath.Join(root, "other"), false}, // holds another workspace
	} {
		err := l.Check(Workspace{Path: tc.path, Others: others})
		if (err == nil) != tc.ok {
			t.Errorf("Check(%s) = %v, want ok %v", tc.path, err, tc.ok)
		}
	}
}

func TestSafePATHLeavesOutWhatAgentsMayWrite(t *testing.T) {
	root := tree(t, "usr/bin/", "home/.cache/bin/", "home/go/pkg/bin/", "home/go/bin/", "home/.local/bin/")
	home := filepath.Join(root, "home")
	unsafe := []string{filepath.Join(home, ".cache"), filepath.Join(home, "go/pkg")}
	list := func(entries ...string) string { return strings.Join(entries, string(filepath.ListSeparator)) }
	path := list(filepath.Join(root, "usr/bin"), filepath.Join(home, ".cache/bin"),
		filepath.Join(home, "go/bin"), "", "relative/bin", filepath.Join(home, "go/pkg/bin"), filepath.Join(home, ".local/bin"))
	kept, dropped := SafePATH(path, unsafe)
	want := list(filepath.Join(root, "usr/bin"), filepath.Join(home, "go/bin"), filepath.Join(home, ".local/bin"))
	if kept != want || len(dropped) != 4 {
		t.Errorf("SafePATH kept %q, dropped %q; want %q and four dropped", kept, dropped, want)
	}

	t.Run("an entry that leads into an unsafe folder through a link", func(t *testing.T) {
		link := filepath.Join(root, "usr/cachelink")
		if err := os.Symlink(filepath.Join(home, ".cache/bin"), link); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(link); err != nil {
			t.Skipf("no symbolic links here: os.Symlink(%s) reported success but made none (wine's CreateSymbolicLink is a stub)", link)
		}
		kept, dropped := SafePATH(list(filepath.Join(root, "usr/bin"), link), unsafe)
		if kept != filepath.Join(root, "usr/bin") || len(dropped) != 1 || dropped[0] != link {
			t.Errorf("SafePATH kept %q, dropped %q; want the link dropped", kept, dropped)
		}
	})
}

// TestAWorkspaceReachedThroughALinkIsNotConfinedToWhereTheLinkLeads: the
// workspace's folder comes from git's records, which its agent can touch;
// a link put in its path since it was found must not steer the grant.
func TestAWorkspaceReachedThroughALinkIsNotConfinedToWhereTheLinkLeads(t *testing.T) {
	planned(t)
	root := tree(t, "cache/a/bin/", "home/.local/bin/", "home/.bashrc")
	home := filepath.Join(root, "home")
	ws := filepath.Join(root, "cache/b/bin")
	if err := os.Symlink(filepath.Join(home, ".local"), filepath.Join(root, "cache/b")); err != nil {
		t.Fatal(err)
	}
	c := &Confiner{Mode: ModeAuto, Layout: Layout{Home: home}, Probe: func() Status { return Status{Enforced: true, ABI: 7} },
		Workspace: func(context.Context, string) (Workspace, error) { return Workspace{Path: ws}, nil }}
	if plan, err := c.Plan(context.Background(), ws); err == nil {
		t.Fatalf("planned %+v for a workspace whose path leads through a link", plan.Policy)
	}
	// Planned before the link was put in, the grant names the path as it
	// was: the helper then refuses it (see TestTheHelperGrantsNoPathThatNowLeadsThroughALink).
	p := Layout{Home: home}.For(Workspace{Path: ws})
	if !slices.ContainsFunc(p.Grants, func(g Grant) bool { return g.Path == ws && g.Access == Write }) {
		t.Errorf("the workspace's grant is not its path as given: %+v", p.Grants)
	}
	if p.Allows(filepath.Join(home, ".local/bin/x"), Write) {
		t.Error("the policy grants where the link leads")
	}
}
