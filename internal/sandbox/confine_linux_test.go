package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	RunHelperIfAsked()
	os.Exit(m.Run())
}

// confined runs script with sh under p through the helper (this test
// binary) and returns its combined output, the status the helper
// reported and the exit error.
func confined(t *testing.T, p Policy, env []string, script string) (string, Status, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	args, penv, err := HelperArgs(sh, []string{"sh", "-c", script}, p)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), penv), env...) // env may override the policy
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, serr := ReadOutcome(r)
	err = cmd.Wait()
	if serr != nil {
		return out.String(), st, serr
	}
	return out.String(), st, err
}

func requireLandlock(t *testing.T) Status {
	t.Helper()
	st := Probe()
	if !st.Enforced {
		// testenv.RequireSandbox's rule; testenv imports this package.
		if os.Getenv("CODEHYDRA_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("no Landlock here: %s (and CODEHYDRA_REQUIRE_SANDBOX=1 forbids skipping)", st.Reason)
		}
		t.Skipf("no Landlock here: %s", st.Reason)
	}
	return st
}

// TestAConfinedShellReachesItsGrantsAndNothingElse runs a shell under a
// policy shaped like an agent's and tries, from inside, what a prompt-
// injected agent would: read and write outside its grants, list a
// folder with a hole, signal and read the environment of a process
// outside its domain (an unconfined one, and one confined in a sibling
// domain).
func TestAConfinedShellReachesItsGrantsAndNothingElse(t *testing.T) {
	want := requireLandlock(t)
	root := tree(t, "home/secret", "home/ok", "ws/a/", "ws/b/secret", "private/token")
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws/a")
	p := Policy{
		Grants: []Grant{{Path: "/", Access: Read}, {Path: ws, Access: Write}, {Path: "/dev/null", Access: Device}},
		Deny:   []string{filepath.Join(root, "private"), filepath.Join(root, "ws/b"), filepath.Join(home, "secret")},
	}
	outside := exec.Command("sleep", "60")
	outside.Env = append(os.Environ(), "OUTSIDE_SECRET=xyzzy")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outside.Process.Kill(); _ = outside.Wait() })
	// A sibling confined in a domain of its own.
	self, _ := os.Executable()
	sleep, _ := exec.LookPath("sleep")
	sargs, senv, _ := HelperArgs(sleep, []string{"sleep", "60"}, p)
	sibling := exec.Command(self, sargs...)
	sibling.Env = append(os.Environ(), senv, "SIBLING_SECRET=plugh")
	if err := sibling.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sibling.Process.Kill(); _ = sibling.Wait() })

	script := fmt.Sprintf(`
echo inside > %[1]s/new && cat %[1]s/new
cat %[2]s/ok
cat %[2]s/secret || echo DENIED-home-secret
cat %[3]s/private/token || echo DENIED-token
cat %[3]s/ws/b/secret || echo DENIED-other-workspace
echo x > %[3]s/ws/b/planted || echo DENIED-write-other
echo x > %[2]s/planted || echo DENIED-write-home
ls %[3]s >/dev/null || echo DENIED-list-hole-parent
kill -0 %[4]d || echo DENIED-signal
tr '\0' '\n' < /proc/%[4]d/environ | grep OUTSIDE_SECRET || echo DENIED-environ-outside
sleep 0.5; tr '\0' '\n' < /proc/%[5]d/environ | grep SIBLING_SECRET || echo DENIED-environ-sibling
`, ws, home, root, outside.Process.Pid, sibling.Process.Pid)
	out, st, err := confined(t, p, nil, script)
	if err != nil {
		t.Fatalf("confined shell: %v\n%s", err, out)
	}
	if st != want {
		t.Errorf("status = %+v, want %+v", st, want)
	}
	for _, line := range []string{"inside", "home/ok", "DENIED-home-secret", "DENIED-token", "DENIED-other-workspace",
		"DENIED-write-other", "DENIED-write-home", "DENIED-list-hole-parent", "DENIED-signal", "DENIED-environ-outside",
		"DENIED-environ-sibling"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	for _, leak := range []string{"xyzzy", "plugh", "private/token", "ws/b/secret"} {
		if strings.Contains(out, leak) && !strings.Contains(out, "cat: "+filepath.Join(root, leak)) {
			t.Errorf("output shows %q:\n%s", leak, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "ws/b/planted")); err == nil {
		t.Error("the confined shell wrote into the other workspace")
	}
}

func TestAHelperThatCannotEnforceReportsWhyAndRunsNothing(t *testing.T) {
	requireLandlock(t)
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}}}
	out, _, err := confined(t, p, []string{PolicyEnv + `={"grants":[{"path":"relative","access":1}]}`}, "echo RAN")
	if err == nil || strings.Contains(out, "RAN") {
		t.Fatalf("err = %v, output %q; want an error and nothing run", err, out)
	}
}

// TestAConfinedProcessMakesNoLinkInTheGitFolders: CodeHydra's own git
// appends to reflogs in the repository's logs/ outside any sandbox; a
// link an agent made there would have it append where the link leads.
func TestAConfinedProcessMakesNoLinkInTheGitFolders(t *testing.T) {
	requireLandlock(t)
	root := tree(t, "repo/.git/logs/refs/heads/main", "repo/.git/refs/heads/main", "home/.bashrc", "ws/")
	logs := filepath.Join(root, "repo/.git/logs")
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: logs, Access: GitWrite},
		{Path: filepath.Join(root, "repo/.git/refs"), Access: GitWrite}, {Path: filepath.Join(root, "ws"), Access: Write},
		{Path: "/dev/null", Access: Device}}}
	out, _, err := confined(t, p, nil, fmt.Sprintf(`
echo entry >> %[1]s/refs/heads/main && echo APPENDED
echo new > %[1]s/refs/heads/other && echo MADE
ln -s %[2]s/home/.bashrc %[1]s/refs/heads/evil || echo REFUSED-link
ln -s %[2]s/home/.bashrc %[2]s/ws/link && mv %[2]s/ws/link %[1]s/refs/heads/moved || echo REFUSED-move
mkdir %[2]s/ws/d && ln -s %[2]s/home/.bashrc %[2]s/ws/d/evil && mv %[2]s/ws/d %[1]s/refs/heads/d || echo REFUSED-folder
mkfifo %[1]s/fifo || echo REFUSED-fifo
echo obj > %[1]s/tmp_obj && mv %[1]s/tmp_obj %[1]s/final_obj && echo RENAMED-IN-PLACE
`, logs, root))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"APPENDED", "MADE", "REFUSED-link", "REFUSED-move", "REFUSED-folder", "REFUSED-fifo", "RENAMED-IN-PLACE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if fi, err := os.Lstat(filepath.Join(logs, "refs/heads/moved")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Error("a link was moved into logs/")
	}
	if _, err := os.Lstat(filepath.Join(logs, "refs/heads/d/evil")); err == nil {
		t.Error("a folder holding a link was moved into logs/")
	}
}

// TestTheHelperGrantsNoPathThatNowLeadsThroughALink: a path in a policy
// was resolved when the policy was made; a link put in it since (by a
// process of an earlier sandbox, or another user in /tmp) must not take
// the grant to where it leads.
func TestTheHelperGrantsNoPathThatNowLeadsThroughALink(t *testing.T) {
	requireLandlock(t)
	root := tree(t, "target/secret", "ws/")
	swapped := filepath.Join(root, "swapped")
	if err := os.Symlink(filepath.Join(root, "target"), swapped); err != nil {
		t.Fatal(err)
	}
	p := Policy{Grants: []Grant{{Path: "/", Access: Read}, {Path: filepath.Join(swapped), Access: Write}, {Path: "/dev/null", Access: Device}},
		Deny: []string{filepath.Join(root, "target")}}
	out, _, err := confined(t, p, nil, fmt.Sprintf(`echo x > %[1]s/target/planted || echo REFUSED; cat %[1]s/target/secret || echo REFUSED-read`, root))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "REFUSED") || !strings.Contains(out, "REFUSED-read") {
		t.Errorf("the grant followed the link:\n%s", out)
	}
}
