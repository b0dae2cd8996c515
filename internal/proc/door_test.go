package proc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// doorExceptions are the places outside this package that may start,
// signal or kill a process on their own, each with why; what lists the
// calls it may make (see processCalls), "*" any. An entry that no longer
// makes one of its calls fails the test too, so that the list stays true.
var doorExceptions = []doorException{
	{"build/", []string{"*"},
		"developer tools (make bench): they drive a built codehydra from outside, and ship in none"},
	{"internal/testenv/", []string{"*"},
		"tests only: git fixtures, chattr, and a helper app that a test starts and kills"},
	{"opencode/internal/fakeopencode/", []string{"*"},
		"tests only: a fake opencode that starts a child of its own, so that tests see the agent's whole tree end"},
	{"workspace/git.go", []string{"exec.CommandContext"},
		"git runs short-lived and is waited for (WaitDelay bounds a leftover holding its pipes); the context kills it; hooks and fsmonitor are off, so it starts no program of the repository's"},
	{"prepare/copy.go", []string{"exec.CommandContext"},
		"`git ls-files --others` runs short-lived and is waited for; the context kills it"},
	{"internal/reap/reap.go", []string{".Signal()"},
		"reaps what a CodeHydra that died left behind: no Process holds those any more, and it signals only the processes it proves to be a child's, one by one"},
	{"internal/reap/proc_linux.go", []string{"os.FindProcess"},
		"finds the members of a dead CodeHydra's child's group that carry its marker, for the reaper"},
	{"internal/reap/proc_darwin.go", []string{"os.FindProcess"},
		"finds the members of a dead CodeHydra's child's group that carry its marker, for the reaper"},
	{"internal/reap/proc_unix_other.go", []string{"exec.Command"},
		"`ps` reads a command line; short-lived and waited for"},
	{"internal/instance/lock_unix.go", []string{"syscall.Kill"},
		"signal 0 to a pid: a probe of whether it runs, which sends nothing"},
	{"opencode/process_linux.go", []string{"reap.MarkedMembers"},
		"reads which of an agent's processes listen on its port; signals none"},
	{"app/notify_linux.go", []string{".Signal()"},
		"a D-Bus connection's Signal: it hands the bus's signals (a notification's ActionInvoked) to a channel; no process is signalled"},
	{"app/windowproc.go", []string{"exec.Command", ".Kill()"},
		"the window process is CodeHydra's own binary showing one window, not a program run for a workspace: it ends when the bridge on its stdin closes, and is killed alone if it has not ended 2 s later"},
	{"app/window/openers.go", []string{"exec.Command"},
		"opens a folder in the user's editor, terminal or file manager: the user's program, meant to outlive CodeHydra"},
	{"app/agenturl.go", []string{"exec.Command"},
		"opens an agent's page with the desktop's opener: the user's browser, meant to outlive CodeHydra"},
	{"internal/cli/gui_windows.go", []string{"exec.Command"},
		"the core program's default command runs the GUI program, which is the app itself and not a program run for a workspace, in the user's console and waits for it (Windows has no exec); the console's Ctrl+C reaches it there"},
}

type doorException struct {
	path string // a file, or a folder ending in "/"
	what []string
	why  string
}

func (e doorException) covers(u processUse) bool {
	inPath := e.path == u.file || strings.HasSuffix(e.path, "/") && strings.HasPrefix(u.file, e.path)
	return inPath && (slices.Contains(e.what, "*") || slices.Contains(e.what, u.what))
}

// processCalls are the names, by import path, whose use starts a process,
// takes hold of one, or puts one in a group, session or job of its own,
// or signals or kills processes.
var processCalls = map[string][]string{
	"os/exec":                  {"Command", "CommandContext"},
	"os":                       {"StartProcess", "FindProcess"},
	"syscall":                  {"StartProcess", "ForkExec", "Kill", "Setpgid", "Setsid", "CreateProcess", "TerminateProcess", "CREATE_NEW_PROCESS_GROUP"},
	"golang.org/x/sys/unix":    {"Kill", "Tgkill", "PidfdSendSignal", "Setpgid", "Setsid"},
	"golang.org/x/sys/windows": {"CreateProcess", "TerminateProcess", "CreateJobObject", "AssignProcessToJobObject", "TerminateJobObject", "GenerateConsoleCtrlEvent", "CREATE_NEW_PROCESS_GROUP"},
	"codehydra/internal/reap":  {"MarkedMembers"},
}

// TestNothingButProcStartsOrEndsAProcessTree pins the one door: outside
// this package only doorExceptions start or end processes by themselves;
// everything else that runs a program goes through Start, which puts it
// in a tree of its own (a process group; a job object on Windows) and
// ends the whole tree.
func TestNothingButProcStartsOrEndsAProcessTree(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root: %v", err)
	}
	uses, err := processUses(root, "internal/proc/")
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]map[string]bool{}
	for _, u := range uses {
		i := slices.IndexFunc(doorExceptions, func(e doorException) bool { return e.covers(u) })
		if i < 0 {
			t.Errorf("%s: %s outside internal/proc: start the program with proc.Start and end it with its Process, "+
				"or add an exception to doorExceptions saying why it may not", u.pos, u.what)
			continue
		}
		if used[i] == nil {
			used[i] = map[string]bool{}
		}
		used[i][u.what], used[i]["*"] = true, true
	}
	for i, e := range doorExceptions {
		for _, w := range e.what {
			if !used[i][w] {
				t.Errorf("doorExceptions lets %s use %s, which it no longer does: drop it from the list", e.path, w)
			}
		}
	}
}

// TestProcessUsesFindsWhatStartsOrEndsAProcess checks the scanner on a
// tree of its own, so that the test above can fail.
func TestProcessUsesFindsWhatStartsOrEndsAProcess(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a/group.go": `package a

import (
	run "os/exec"
	"syscall"
)

func start() {
	cmd := run.Command("npm", "install")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	_ = cmd.Start()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	cmd.Process.Kill()
}
`,
		"b/tree_windows.go": `package b

import "golang.org/x/sys/windows"

func tree() { j, _ := windows.CreateJobObject(nil, nil); windows.TerminateJobObject(j, 1) }
`,
		"c/clean.go": `package c

import (
	"context"

	"codehydra/internal/proc"
)

// Kill on a proc.Process, and names that only look alike, are fine.
func run(ctx context.Context) {
	p, _ := proc.Start(ctx, proc.Options{Path: "npm"})
	p.Kill()
	var Command, Kill func()
	_, _ = Command, Kill
}
`,
		"c/clean_test.go":      "package c\n\nimport \"os/exec\"\n\nvar _ = exec.Command\n",
		"internal/proc/own.go": "package proc\n\nimport \"os/exec\"\n\nvar _ = exec.Command\n",
		"d/testdata/x.go":      "package x\n\nimport \"os/exec\"\n\nvar _ = exec.Command\n",
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	uses, err := processUses(root, "internal/proc/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range uses {
		got = append(got, fmt.Sprintf("%s:%d %s", u.file, u.pos.Line, u.what))
	}
	want := []string{
		"a/group.go:9 exec.Command",
		"a/group.go:10 SysProcAttr",
		"a/group.go:10 SysProcAttr",
		"a/group.go:12 syscall.Kill",
		"a/group.go:13 .Signal()",
		"a/group.go:14 .Kill()",
		"b/tree_windows.go:5 windows.CreateJobObject",
		"b/tree_windows.go:5 windows.TerminateJobObject",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// processUse is one place that starts, takes hold of, groups, signals or
// kills a process.
type processUse struct {
	file string // slash-separated, relative to the root
	pos  token.Position
	what string // "exec.Command", "SysProcAttr", ".Signal()", …
}

// processUses lists the process uses in the Go files below root, test
// files, testdata and the folder skip (slash-separated, ending in "/")
// left out. Files of every system are read, whatever their build
// constraints.
func processUses(root, skip string) ([]processUse, error) {
	fset := token.NewFileSet()
	var uses []processUse
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || rel+"/" == skip) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, u := range fileProcessUses(fset, f) {
			u.file = rel
			uses = append(uses, u)
		}
		return nil
	})
	return uses, err
}

func fileProcessUses(fset *token.FileSet, f *ast.File) []processUse {
	imports := map[string]string{} // local name → import path
	usesProc := false
	for _, im := range f.Imports {
		ip, _ := strconv.Unquote(im.Path.Value)
		name := path.Base(ip)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = ip
		usesProc = usesProc || ip == "codehydra/internal/proc"
	}
	var uses []processUse
	add := func(n ast.Node, what string) {
		uses = append(uses, processUse{pos: fset.Position(n.Pos()), what: what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if n.Sel.Name == "SysProcAttr" {
				add(n, "SysProcAttr")
			}
			if x, ok := n.X.(*ast.Ident); ok {
				if ip, ok := imports[x.Name]; ok && slices.Contains(processCalls[ip], n.Sel.Name) {
					add(n, path.Base(ip)+"."+n.Sel.Name)
				}
			}
		case *ast.CallExpr:
			// An *os.Process's methods; Kill is also proc.Process's, so a
			// file that uses package proc is taken to call that one.
			sel, ok := n.Fun.(*ast.SelectorExpr)
			switch {
			case !ok:
			case sel.Sel.Name == "Signal" && len(n.Args) == 1:
				add(n, ".Signal()")
			case sel.Sel.Name == "Kill" && len(n.Args) == 0 && !usesProc:
				add(n, ".Kill()")
			}
		}
		return true
	})
	return uses
}
