package daemon

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/proc"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// sandboxFixture is a server whose kernel sandbox is built as CodeHydra
// builds it (confine, from the settings), over a project with workspaces
// a and b made by the workspace manager where CodeHydra makes them.
type sandboxFixture struct {
	s       *server
	project string
	a, b    workspace.Workspace
}

func newSandboxFixture(t *testing.T) *sandboxFixture {
	t.Helper()
	testenv.RequireSandbox(t)
	testenv.Isolate(t)
	s := &server{
		opts: Options{Stdout: io.Discard, Stderr: io.Discard, Getenv: os.Getenv, Now: time.Now},
		pid:  os.Getpid(),
		log:  slog.New(slog.DiscardHandler),
	}
	testenv.WriteSettings(t, "{}")
	if err := s.loadSettings(); err != nil {
		t.Fatal(err)
	}
	project := testenv.GitRepo(t, "proj")
	s.manager = workspace.NewManager(workspace.Options{Projects: []string{project}})
	if err := s.manager.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := &sandboxFixture{s: s, project: project}
	for _, ws := range []*workspace.Workspace{&f.a, &f.b} {
		name := "a"
		if ws == &f.b {
			name = "b"
		}
		var err error
		if *ws, err = s.manager.Create(t.Context(), workspace.CreateOptions{ProjectPath: project, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// settings changes the settings that the next confined start reads.
func (f *sandboxFixture) settings(t *testing.T, fn func(*settings.Sandbox)) {
	t.Helper()
	if err := f.s.settings.Update(func(s *settings.Settings) { fn(&s.Sandbox) }); err != nil {
		t.Fatal(err)
	}
}

// run runs script with sh in workspace ws, confined as its processes are
// (its plan from confine, started through package proc), and returns
// what it printed.
func (f *sandboxFixture) run(t *testing.T, ws workspace.Workspace, script string) string {
	t.Helper()
	plan, err := f.s.confine(t.Context(), ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Policy == nil {
		t.Fatalf("workspace %s is not confined: %s", ws.Path, plan.Status.Reason)
	}
	var out bytes.Buffer
	p, err := proc.Start(t.Context(), proc.Options{Path: "sh", Args: []string{"-c", script}, Dir: ws.Path,
		Env: append(os.Environ(), plan.Env...), Sandbox: plan.Policy, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("confined shell: %v\n%s", err, out.String())
	}
	return out.String()
}

// wantLines fails t for each line that out lacks.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Errorf("output lacks %q:\n%s", l, out)
		}
	}
}

// TestTheSandboxSettingsWidenWhatAConfinedProcessReachesButNotIntoCodeHydrasFolders:
// sandbox.readable opens a hidden folder (a credential store of the
// defaults) to a confined shell, sandbox.writable lets it write a folder
// it could only read, and neither hands it CodeHydra's own folders (such
// entries are left out, not refused).
func TestTheSandboxSettingsWidenWhatAConfinedProcessReachesButNotIntoCodeHydrasFolders(t *testing.T) {
	f := newSandboxFixture(t)
	home, _ := os.UserHomeDir()
	aws, m2 := filepath.Join(home, ".aws"), filepath.Join(home, ".m2")
	testenv.WriteFile(t, filepath.Join(aws, "credentials"), "aws-secret\n")
	testenv.WriteFile(t, filepath.Join(m2, "settings.xml"), "<settings/>\n")
	testenv.WriteFile(t, paths.TokenFile(), "master-token\n")
	settingsBefore, err := os.ReadFile(paths.SettingsFile())
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`
cat %[1]s/credentials || echo REFUSED-read-aws
echo x > %[2]s/planted && echo WROTE-m2 || echo REFUSED-write-m2
cat %[3]s || echo REFUSED-read-token
echo '{}' > %[4]s || echo REFUSED-write-settings
`, aws, m2, paths.TokenFile(), paths.SettingsFile())

	// The defaults: ~/.aws hidden, ~/.m2 read-only, CodeHydra's folders cut out.
	out := f.run(t, f.a, script)
	wantLines(t, out, "REFUSED-read-aws", "REFUSED-write-m2", "REFUSED-read-token", "REFUSED-write-settings")
	if strings.Contains(out, "aws-secret") || testenv.Exists(filepath.Join(m2, "planted")) {
		t.Fatalf("the defaults let the confined shell reach ~/.aws or write ~/.m2:\n%s", out)
	}
	if after, _ := os.ReadFile(paths.SettingsFile()); !bytes.Equal(after, settingsBefore) {
		t.Fatalf("the confined shell rewrote settings.json: %q", after)
	}

	// Widened, with entries that point into CodeHydra's own folders too.
	f.settings(t, func(sb *settings.Sandbox) {
		sb.Readable = []string{"~/.aws", paths.StateDir(), paths.DataDir()}
		sb.Writable = []string{"~/.m2", paths.ConfigDir(), paths.StateDir()}
	})
	settingsBefore, err = os.ReadFile(paths.SettingsFile())
	if err != nil {
		t.Fatal(err)
	}
	out = f.run(t, f.a, script)
	wantLines(t, out, "aws-secret", "WROTE-m2", "REFUSED-read-token", "REFUSED-write-settings")
	if strings.Contains(out, "master-token") {
		t.Errorf("sandbox.readable handed out CodeHydra's state folder:\n%s", out)
	}
	if after, _ := os.ReadFile(paths.SettingsFile()); !bytes.Equal(after, settingsBefore) {
		t.Errorf("sandbox.writable handed out CodeHydra's config folder: settings.json is now %q", after)
	}
	// The other workspace, in CodeHydra's data folder, stays cut out too.
	testenv.WriteFile(t, filepath.Join(f.b.Path, "secret"), "b-secret\n")
	out = f.run(t, f.a, fmt.Sprintf(`cat %s/secret || echo REFUSED-read-b`, f.b.Path))
	wantLines(t, out, "REFUSED-read-b")
}

// TestAConfinedShellCommitsInItsWorktreeButCannotWriteTheRepositorysConfigHooksOrAnotherWorktree:
// the repository's git folder is written only where a commit writes
// (objects, refs, logs, the worktree's own folder); its config and hooks,
// which CodeHydra's and the user's git read outside any sandbox, and the
// other worktrees' folders stay as they are.
func TestAConfinedShellCommitsInItsWorktreeButCannotWriteTheRepositorysConfigHooksOrAnotherWorktree(t *testing.T) {
	f := newSandboxFixture(t)
	common := filepath.Join(f.project, ".git")
	other := filepath.Join(common, "worktrees", "b")
	config := filepath.Join(common, "config")
	// The tray's switch-off of an MCP server for a is kept there too.
	if err := f.s.manager.SetMCPServerOff(t.Context(), f.a.Path, "fs", true); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{config, filepath.Join(other, "HEAD"), filepath.Join(other, "gitdir")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = b
	}
	out := f.run(t, f.a, fmt.Sprintf(`
echo work > work.txt && git add work.txt && git commit -q -m work && echo COMMITTED
git config core.hooksPath .githooks || echo REFUSED-git-config
git config --remove-section 'codehydra-worktree.%[3]s' || echo REFUSED-mcpoff
echo '[core] fsmonitor = x' >> %[1]s/config || echo REFUSED-config
echo '#!/bin/sh' > %[1]s/hooks/post-checkout || echo REFUSED-hook
mkdir %[1]s/hooks/sub || echo REFUSED-hook-folder
echo 'ref: refs/heads/a' > %[2]s/HEAD || echo REFUSED-other-head
echo x > %[2]s/config.worktree || echo REFUSED-other-config
`, common, other, f.a.Path))
	wantLines(t, out, "COMMITTED", "REFUSED-git-config", "REFUSED-mcpoff", "REFUSED-config", "REFUSED-hook\n", "REFUSED-hook-folder",
		"REFUSED-other-head", "REFUSED-other-config")
	if got := testenv.Git(t, f.project, "log", "-1", "--format=%s", "a"); strings.TrimSpace(got) != "work" {
		t.Errorf("branch a's last commit is %q, want the confined shell's", got)
	}
	for p, b := range before {
		if after, _ := os.ReadFile(p); !bytes.Equal(after, b) {
			t.Errorf("%s changed: %q", p, after)
		}
	}
	for _, p := range []string{filepath.Join(common, "hooks", "post-checkout"), filepath.Join(common, "hooks", "sub"), filepath.Join(other, "config.worktree")} {
		if testenv.Exists(p) {
			t.Errorf("%s was made", p)
		}
	}
}
