// Package tasks finds the tasks a workspace declares (justfile recipes,
// Makefile targets, package.json scripts) and runs one of them without a
// shell, in its own process group, keeping the tail of its output: in the
// foreground under a timeout (RunAndWait), or in the background until it
// is stopped (Runs, for dev servers).
//
// Finding tasks never runs anything: `make -pq` would expand the
// Makefile's $(shell …) and `just --summary` needs just installed, so the
// three files are read by small conservative parsers instead. A task they
// miss (a target from an included makefile, a target defined through
// variables) is not listed and cannot be run through this package.
package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// Name prefixes: a task's name is "<prefix>:<name in its file>", so that a
// Makefile target and a package.json script of the same name stay
// distinct, and a name does not change when another file gains a task.
const (
	PrefixJust = "just"
	PrefixMake = "make"
	PrefixNPM  = "npm"
)

// Sources, as Task.Source names them.
const (
	SourceJustfile    = "justfile"
	SourceMakefile    = "Makefile"
	SourcePackageJSON = "package.json"
)

// maxFileBytes bounds a task file read; a larger one is not a task file a
// person wrote.
const maxFileBytes = 1 << 20

// Task is one runnable task of a workspace.
type Task struct {
	// Name is what to pass to run it: "just:<recipe>", "make:<target>" or
	// "npm:<script>".
	Name string `json:"name"`
	// Source is the kind of file it comes from: "justfile", "Makefile" or
	// "package.json".
	Source string `json:"source"`
	// Command says in words what runs, e.g. "make -- build" or
	// "npm run test -- (jest --ci)".
	Command string `json:"command"`
	// maxArgs bounds the arguments a just recipe takes (its parameters);
	// -1 for no bound (a variadic parameter). Only just recipes use it.
	maxArgs int
}

// The file names each tool looks for, in the order it looks.
var (
	justfileNames = []string{"justfile", "Justfile", ".justfile", "JUSTFILE"}
	makefileNames = []string{"GNUmakefile", "makefile", "Makefile"}
)

// Find lists the tasks of the workspace folder dir, sorted by name. The
// files are read inside dir only (a symlink that leads out of it is not
// followed). A file that cannot be read or parsed is reported in the
// error, which is joined over all files; the tasks of the other files are
// returned with it.
func Find(dir string) ([]Task, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace folder %s: %w", dir, err)
	}
	defer root.Close()
	var all []Task
	var errs []error
	add := func(found []Task, err error) {
		all = append(all, found...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(findIn(root, justfileNames, SourceJustfile, justTasks))
	add(findIn(root, makefileNames, SourceMakefile, makeTasks))
	add(findIn(root, []string{SourcePackageJSON}, SourcePackageJSON, npmTasks(root)))
	slices.SortFunc(all, func(a, b Task) int { return strings.Compare(a.Name, b.Name) })
	return all, errors.Join(errs...)
}

// findIn parses the first of names that exists in root.
func findIn(root *os.Root, names []string, source string, parse func([]byte) ([]Task, error)) ([]Task, error) {
	name, data, err := readFirst(root, names)
	if err != nil || name == "" {
		return nil, err
	}
	found, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("read tasks of %s: %w", name, err)
	}
	for i := range found {
		found[i].Source = source
	}
	return found, nil
}

// readFirst reads the first of names that is a regular file in root; name
// is "" when there is none.
func readFirst(root *os.Root, names []string) (name string, data []byte, err error) {
	for _, n := range names {
		// Lstat first: opening a FIFO named Makefile would block.
		if st, err := root.Lstat(n); err == nil && !st.Mode().IsRegular() && st.Mode()&fs.ModeSymlink == 0 {
			return n, nil, fmt.Errorf("open %s: not a regular file", n)
		}
		f, err := root.OpenFile(n, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, nil, fmt.Errorf("open %s: %w", n, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return n, nil, fmt.Errorf("open %s: not a regular file", n)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
		if err != nil {
			return n, nil, fmt.Errorf("read %s: %w", n, err)
		}
		if len(data) > maxFileBytes {
			return n, nil, fmt.Errorf("read %s: larger than %d bytes", n, maxFileBytes)
		}
		return n, data, nil
	}
	return "", nil, nil
}
