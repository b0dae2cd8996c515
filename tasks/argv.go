package tasks

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Limits of the arguments a run appends to a task's command.
const (
	MaxArgs     = 100
	MaxArgBytes = 4096
)

// ErrBadArgs marks arguments that Argv refuses.
var ErrBadArgs = errors.New("bad task arguments")

// makeVariable is the only argument form a make task takes: a variable
// assignment. Anything else would be another target (or, before "--", an
// option), which is not the task that was asked for.
var makeVariable = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// lockfiles name the package manager a folder uses, first match wins; no
// lockfile means npm.
var lockfiles = []struct{ file, manager string }{
	{"pnpm-lock.yaml", "pnpm"},
	{"yarn.lock", "yarn"},
	{"bun.lock", "bun"},
	{"bun.lockb", "bun"},
}

// Argv is the command line that runs task t of the workspace folder dir
// with args appended as separate arguments, never through a shell:
//
//   - just:<recipe>   just -- <recipe> args…   (args are the recipe's parameters)
//   - make:<target>   make -- <target> args…   (each arg must be VAR=value)
//   - npm:<script>    npm run <script> -- args…, or pnpm/yarn/bun run
//     <script> args… when the folder has that manager's lockfile.
//
// An argument with a NUL byte, over MaxArgBytes, or more than MaxArgs of
// them are refused with an error wrapping ErrBadArgs.
func Argv(dir string, t Task, args []string) ([]string, error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	prefix, name, ok := strings.Cut(t.Name, ":")
	if !ok || name == "" {
		return nil, fmt.Errorf("%w: %q is not a task name of the form source:name", ErrBadArgs, t.Name)
	}
	switch prefix {
	case PrefixJust:
		return append([]string{"just", "--", name}, args...), nil
	case PrefixMake:
		for _, a := range args {
			if !makeVariable.MatchString(a) {
				return nil, fmt.Errorf("%w: make tasks take variable assignments only (NAME=value), not %q", ErrBadArgs, a)
			}
		}
		return append([]string{"make", "--", name}, args...), nil
	case PrefixNPM:
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("open workspace folder %s: %w", dir, err)
		}
		defer root.Close()
		return scriptArgv(packageManager(root), name, args), nil
	}
	return nil, fmt.Errorf("%w: unknown task source %q", ErrBadArgs, prefix)
}

func checkArgs(args []string) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("%w: %d arguments, at most %d", ErrBadArgs, len(args), MaxArgs)
	}
	for i, a := range args {
		switch {
		case strings.ContainsRune(a, 0):
			return fmt.Errorf("%w: argument %d holds a NUL byte", ErrBadArgs, i)
		case len(a) > MaxArgBytes:
			return fmt.Errorf("%w: argument %d is %d bytes, at most %d", ErrBadArgs, i, len(a), MaxArgBytes)
		}
	}
	return nil
}

// packageManager is the package manager whose lockfile root holds.
func packageManager(root *os.Root) string {
	for _, l := range lockfiles {
		if _, err := root.Lstat(l.file); err == nil {
			return l.manager
		}
	}
	return "npm"
}

// scriptArgv runs script with pm. npm needs "--" before the script's
// arguments (it would take them as its own options); the others pass
// everything after the script name to it.
func scriptArgv(pm, script string, args []string) []string {
	argv := []string{pm, "run", script}
	if pm == "npm" {
		argv = append(argv, "--")
	}
	return append(argv, slices.Clone(args)...)
}
