package window

// Opening a workspace's or a project's folder in the desktop's programs:
// the file manager, a terminal, an editor. Each runs without a shell, in
// the folder, and is left running when the app quits; a program that
// cannot be found or fails at once is reported as a sentence that names
// the setting to change, never as a bare exec error.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"codehydra/internal/settings"
)

// Program is what a folder opens in.
type Program string

// The programs a folder opens in.
const (
	FileManager Program = "folder"
	Terminal    Program = "terminal"
	Editor      Program = "editor"
)

// defaultTerminals are tried in order when neither terminalCommand nor
// $TERMINAL names one. Those that would start in their own default folder
// are told the folder.
var defaultTerminals = []string{
	"x-terminal-emulator",
	"xfce4-terminal --working-directory {path}",
	"gnome-terminal --working-directory={path}",
	"konsole --workdir {path}",
	"xterm",
}

// failWindow is how long after its start a program's failure is still
// reported: xdg-open and terminal launchers that cannot open anything
// exit at once, while a program that started fine may run for hours.
const failWindow = 5 * time.Second

// finder picks the program that opens a folder. Its fields are the
// environment, so tests can pose as any desktop.
type finder struct {
	getenv   func(string) string
	lookPath func(string) (string, error)
	goos     string
}

// newFinder looks at the real environment; getenv (nil for os.Getenv) is
// Deps.Getenv.
func newFinder(getenv func(string) string) finder {
	if getenv == nil {
		getenv = os.Getenv
	}
	return finder{getenv: getenv, lookPath: exec.LookPath, goos: runtime.GOOS}
}

// OpenIn opens the folder at path in prog, with the user's settings;
// what goes wrong is shown in an error window titled title (the item that
// asked).
func (u *UI) OpenIn(prog Program, title, path string) {
	failed := func(err error) { u.do(func() { u.ShowError(title, err) }) }
	if err := u.open(prog, path, failed); err != nil {
		u.ShowError(title, err)
	}
}

// open opens path in prog with the user's settings. A program that cannot
// start is returned; one that fails soon after goes to failed, later.
func (u *UI) open(prog Program, path string, failed func(error)) error {
	l, err := newFinder(u.deps.Getenv).command(prog, path, u.deps.Settings.Get())
	if err != nil {
		return err
	}
	u.log.Info("open", "what", l.what, "argv0", l.argv[0], "dir", path)
	return l.run(failed)
}

// launch is a program to run in dir; what says what it is, for messages.
type launch struct {
	argv []string
	dir  string
	what string
	// hint is the way on when the program fails at once ("" for none).
	hint string
}

// openError is a failure to open a folder, as the sentence a user sees.
type openError struct{ msg string }

func (e *openError) Error() string { return e.msg }

func sayOpen(format string, args ...any) error {
	return &openError{msg: fmt.Sprintf(format, args...)}
}

// command is what opens dir in prog, with the settings s.
func (f finder) command(prog Program, dir string, s settings.Settings) (launch, error) {
	switch prog {
	case Terminal:
		return f.terminal(dir, s.TerminalCommand)
	case Editor:
		return f.editor(dir, s.EditorCommand)
	default:
		return f.folder(dir)
	}
}

// folder is the desktop's own way of opening a folder (its file manager).
func (f finder) folder(dir string) (launch, error) {
	prog := "xdg-open"
	switch f.goos {
	case "darwin":
		prog = "open"
	case "windows":
		prog = "explorer"
	}
	if _, err := f.lookPath(prog); err != nil {
		return launch{}, sayOpen("Nothing here opens folders: %s is not installed (on Linux it comes with xdg-utils). Use Copy path instead.", prog)
	}
	l := launch{argv: []string{prog, dir}, dir: dir, what: "the file manager"}
	if prog == "xdg-open" {
		l.hint = "Use Copy path instead, or give folders a default app, e.g. `xdg-mime default thunar.desktop inode/directory`."
	}
	return l, nil
}

// editor is editorCommand, else VS Code's `code` when on PATH, else the
// desktop's way of opening the folder. $VISUAL and $EDITOR are not used:
// they are usually editors that need a terminal.
func (f finder) editor(dir, line string) (launch, error) {
	if strings.TrimSpace(line) != "" {
		return f.configured("editor command", "editorCommand", line, dir, true)
	}
	if _, err := f.lookPath("code"); err == nil {
		return launch{argv: []string{"code", dir}, dir: dir, what: "the editor (code)"}, nil
	}
	l, err := f.folder(dir)
	if err != nil {
		return launch{}, sayOpen("No editor was found: code is not on PATH, and nothing opens folders here. Set the editor command in Settings (editorCommand), e.g. \"gvim\" or \"/opt/idea/bin/idea.sh\".")
	}
	return l, nil
}

// terminal is terminalCommand, else $TERMINAL, else the first of
// defaultTerminals on PATH (macOS: Terminal.app; Windows: cmd).
func (f finder) terminal(dir, line string) (launch, error) {
	if strings.TrimSpace(line) != "" {
		return f.configured("terminal command", "terminalCommand", line, dir, false)
	}
	candidates := defaultTerminals
	switch f.goos {
	case "darwin":
		candidates = []string{"open -a Terminal {path}"}
	case "windows":
		// cmd.exe by its full path: start resolves a bare name in the
		// current folder first, which is the repository's.
		cmdExe := filepath.Join(f.getenv("SystemRoot"), "System32", "cmd.exe")
		if f.getenv("SystemRoot") == "" {
			cmdExe = `C:\Windows\System32\cmd.exe`
		}
		// SplitCommand keeps backslashes; quotes keep spaces.
		candidates = []string{`"` + cmdExe + `" /c start "" "` + cmdExe + `"`}
	}
	if env := strings.TrimSpace(f.getenv("TERMINAL")); env != "" {
		candidates = append([]string{env}, candidates...)
	}
	for _, c := range candidates {
		words, err := settings.SplitCommand(c)
		if err != nil || len(words) == 0 {
			continue
		}
		if _, err := f.lookPath(words[0]); err == nil {
			return launch{argv: withPath(words, dir, false), dir: dir, what: "the terminal (" + words[0] + ")"}, nil
		}
	}
	return launch{}, sayOpen("No terminal was found: $TERMINAL is not set and none of x-terminal-emulator, xfce4-terminal, gnome-terminal, konsole or xterm is on PATH. Set the terminal command in Settings (terminalCommand), e.g. \"alacritty --working-directory {path}\".")
}

// configured is the command line the user set as what (setting key): its
// program must be found, and the folder goes into it (withPath).
func (f finder) configured(what, key, line, dir string, appendPath bool) (launch, error) {
	label := fmt.Sprintf("the %s in Settings (%s)", what, key)
	if err := settings.CheckCommand(key, line); err != nil {
		return launch{}, sayOpen("%s cannot be run: %v. Fix it in Settings, or clear it to use the default.", capitalize(label), err)
	}
	words, _ := settings.SplitCommand(line)
	if _, err := f.lookPath(words[0]); err != nil {
		why := "is not on PATH"
		if strings.ContainsAny(words[0], `/\`) {
			why = "does not exist or is not executable"
		}
		return launch{}, sayOpen("%s runs %q, which %s. Fix it in Settings, or clear it to use the default.", capitalize(label), words[0], why)
	}
	return launch{argv: withPath(words, dir, appendPath), dir: dir, what: label}, nil
}

// withPath puts dir into words: for each settings.PathPlaceholder in an
// argument; with none, as the last argument when appendPath (an editor
// opens the folder it is given, while a terminal would run it as a
// command).
func withPath(words []string, dir string, appendPath bool) []string {
	out := []string{words[0]}
	found := false
	for _, w := range words[1:] {
		if strings.Contains(w, settings.PathPlaceholder) {
			found = true
			w = strings.ReplaceAll(w, settings.PathPlaceholder, dir)
		}
		out = append(out, w)
	}
	if !found && appendPath {
		out = append(out, dir)
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// run starts l and returns at once. Its failure to start is returned;
// a failure within failWindow goes to failed (on its own goroutine, which
// ends with the program: the program may outlive the app).
func (l launch) run(failed func(error)) error {
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Dir = l.dir
	stderr := &tailBuffer{max: 512}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return sayOpen("Could not start %s (%s): %s.", l.what, l.argv[0], startProblem(err))
	}
	started := time.Now()
	go func() {
		err := cmd.Wait()
		if err == nil || time.Since(started) > failWindow {
			return
		}
		msg := fmt.Sprintf("%s (%s) failed at once: %v", capitalize(l.what), l.argv[0], err)
		if tail := stderr.lastLine(); tail != "" {
			msg += ": " + tail
		}
		if l.hint != "" {
			msg += ". " + strings.TrimSuffix(l.hint, ".")
		}
		failed(sayOpen("%s.", msg))
	}()
	return nil
}

// startProblem says in words why a program did not start.
func startProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, exec.ErrNotFound):
		return "it does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "it is not executable"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

// lastLine is the last line that is not blank.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// commandEntry is the settings window's field for editorCommand or
// terminalCommand (key), opening in prog; its placeholder says what an
// empty field runs on this machine.
func commandEntry(key string, prog Program, f finder) *field {
	e := newField(func(s string) error { _, err := readCommand(key, s); return err })
	e.SetPlaceHolder("empty: " + f.defaultNote(prog))
	return e
}

// readCommand is the command line typed for key, trimmed and checked.
func readCommand(key, s string) (string, error) {
	s = strings.TrimSpace(s)
	return s, settings.CheckCommand(key, s)
}

// defaultNote says what opens a folder in prog when its setting is empty.
func (f finder) defaultNote(prog Program) string {
	l, err := f.command(prog, settings.PathPlaceholder, settings.Settings{})
	switch {
	case err != nil:
		return "none found on this machine; enter a command"
	case l.argv[0] == "xdg-open" || l.argv[0] == "open" || l.argv[0] == "explorer":
		return l.argv[0] + " (the folder's default app)"
	}
	return strings.Join(l.argv, " ")
}
