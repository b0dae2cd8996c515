package prepare

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestWorktreeIncludeMatchesLikeGitignore(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		in    []string
		out   []string
	}{
		{"a name matches at any depth", ".env", []string{".env", "api/.env", "a/b/.env/x"}, []string{".env.local", "env"}},
		{"a glob stays in one element", "*.local", []string{"x.local", "deep/y.local"}, []string{"x.local.bak"}},
		{"anchored at the root", "/.env", []string{".env"}, []string{"api/.env"}},
		{"a middle slash anchors", "config/local.json", []string{"config/local.json"}, []string{"api/config/local.json"}},
		{"a folder only", "secrets/", []string{"secrets/a", "x/secrets/b/c"}, []string{"secrets"}},
		{"leading **", "**/cache.db", []string{"cache.db", "a/b/cache.db"}, []string{"a/cache.dbx"}},
		{"trailing **", "build/**", []string{"build/a", "build/b/c"}, []string{"build", "xbuild/a"}},
		{"middle **", "a/**/z.txt", []string{"a/z.txt", "a/b/z.txt", "a/b/c/z.txt"}, []string{"b/a/z.txt"}},
		{"negation takes back", ".env*\n!.env.example", []string{".env", ".env.local"}, []string{".env.example"}},
		{"negation inside a folder", "config/\n!config/secret.json", []string{"config/a.json"}, []string{"config/secret.json"}},
		{"the last rule wins", "!x\nx", []string{"x"}, nil},
		{"comments, blanks and trailing spaces", "# a comment\n\n.env   \n\\#hash", []string{".env", "#hash"}, []string{"# a comment"}},
		{"character classes", "log[0-9].txt\nv[!0-9]", []string{"log1.txt", "va"}, []string{"logx.txt", "v1"}},
		{"CRLF lines", ".env\r\n.npmrc\r\n", []string{".env", ".npmrc"}, nil},
		{"an escaped !", `\!important`, []string{"!important"}, []string{"important"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := parseIncludeRules(tt.rules)
			for _, f := range tt.in {
				if !rules.Match(f) {
					t.Errorf("%q does not match %q", tt.rules, f)
				}
			}
			for _, f := range tt.out {
				if rules.Match(f) {
					t.Errorf("%q matches %q", tt.rules, f)
				}
			}
		})
	}
}

func TestCopyFilesCopiesTheUntrackedFilesTheWorktreeIncludeNames(t *testing.T) {
	main, wt, outside := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(main, ".gitignore"), ".env*\nsecrets/\nnode_modules/\n")
	testenv.WriteFile(t, filepath.Join(main, ".worktreeinclude"), "# copied into each worktree\n.env*\n!.env.example\nsecrets/\n/linked\n")
	testenv.WriteFile(t, filepath.Join(main, ".env"), "KEY=1\n")
	testenv.WriteFile(t, filepath.Join(main, ".env.example"), "KEY=\n")
	testenv.WriteFile(t, filepath.Join(main, "api", ".env.local"), "KEY=2\n")
	testenv.WriteFile(t, filepath.Join(main, "secrets", "db.key"), "key\n")
	testenv.WriteFile(t, filepath.Join(main, "node_modules", "x", "index.js"), "x\n")
	testenv.WriteFile(t, filepath.Join(main, "settings.json"), "{}\n")   // matched by the settings
	testenv.WriteFile(t, filepath.Join(main, "tracked.txt"), "main's\n") // tracked in the worktree
	// A tracked file the include names is not copied: only untracked ones are.
	testenv.WriteFile(t, filepath.Join(main, "secrets", "README"), "committed\n")
	testenv.Git(t, main, "add", "-f", "secrets/README")
	testenv.Git(t, main, "commit", "-m", "readme")
	// A symlink out of the checkout is named, and not followed.
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(main, "linked")); err != nil {
		t.Fatal(err)
	}

	rep, err := CopyFiles(context.Background(), main, wt, []string{"settings.json"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.Copied)
	want := []string{".env", "api/.env.local", "secrets/db.key", "settings.json"}
	if !slices.Equal(rep.Copied, want) {
		t.Fatalf("copied %v, want %v (report %+v)", rep.Copied, want, rep)
	}
	for _, f := range []string{".env.example", "node_modules/x/index.js", "linked", ".worktreeinclude", "secrets/README"} {
		if _, err := os.Lstat(filepath.Join(wt, f)); err == nil {
			t.Errorf("%s was copied", f)
		}
	}
	if !slices.ContainsFunc(rep.Skipped, func(s string) bool {
		return s == "linked: a symlink that leads out of the project's folder or nowhere; not copied"
	}) {
		t.Errorf("the symlink out is not reported as skipped: %v", rep.Skipped)
	}
}

func TestAWorktreeIncludeThatIsASymlinkOutOfTheCheckoutIsNotRead(t *testing.T) {
	main, wt, outside := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(outside, "rules"), ".env\n")
	testenv.WriteFile(t, filepath.Join(main, ".env"), "KEY=1\n")
	if err := os.Symlink(filepath.Join(outside, "rules"), filepath.Join(main, ".worktreeinclude")); err != nil {
		t.Fatal(err)
	}
	rep, err := CopyFiles(context.Background(), main, wt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Copied) != 0 || len(rep.Skipped) != 1 {
		t.Fatalf("report %+v, want nothing copied and the include file reported", rep)
	}
}

func TestANewWorkspaceOfAProjectWithOnlyAWorktreeIncludeGetsItsFiles(t *testing.T) {
	main, wt, _ := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(main, ".worktreeinclude"), ".env\n")
	testenv.WriteFile(t, filepath.Join(main, ".env"), "KEY=1\n")
	h := newHarness(t, settings.ProjectSetup{})
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main}, true)
	h.waitPhase(t, wt, PhaseDone)
	if b, err := os.ReadFile(filepath.Join(wt, ".env")); err != nil || string(b) != "KEY=1\n" {
		t.Fatalf(".env in the new workspace: %q, %v", b, err)
	}
	// The phase is done just before the agent's start is called.
	testenv.WaitFor(t, "the agent to start", 5*time.Second, func() bool { return h.startedCount() == 1 })
}
