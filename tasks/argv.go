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
var makeVariable = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// makeOwnVariable reports a variable that make itself reads: its flags
// (MAKEFLAGS=--eval=… runs any command), the makefiles it reads, the
// shell it runs recipes with. Names starting with "." (.SHELLFLAGS,
// .RECIPEPREFIX) never match makeVariable.
func makeOwnVariable(name string) bool {
	switch name {
	case "MFLAGS", "GNUMAKEFLAGS", "SHELL", "VPATH", "SUFFIXES":
		return true
	}
	return strings.HasPrefix(name, "MAKE")
}

// safeArgChar reports a character a task's argument may hold: letters,
// digits and ._+-/:=,@%^~. make expands $ in a variable's value and pastes
// the value into the recipe's shell line; just pastes a parameter into
// its recipe's; so quotes, backquotes, $, blanks and ;|&<>()\#*?[]{}!
// and line breaks, which a shell or make would read as more than text,
// are refused.
func safeArgChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("._+-/:=,@%^~", r)
}

// checkArgChars refuses an argument with a character outside safeArgChar,
// naming it (see charName).
func checkArgChars(i int, a string) error {
	for _, r := range a {
		if !safeArgChar(r) {
			return fmt.Errorf("%w: args[%d] holds %s, which the task's shell or make would not take as plain text; "+
				"task arguments may hold letters, digits and ._+-/:=,@%%^~ only", ErrBadArgs, i, charName(r))
		}
	}
	return nil
}

// charName names r for an error: blanks and line breaks, which a quoted
// character leaves hard to see, in words as well.
func charName(r rune) string {
	switch r {
	case ' ':
		return "a space"
	case '\t':
		return "a tab"
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return fmt.Sprintf("a line break (%q)", r)
	}
	return fmt.Sprintf("%q", r)
}

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
		if t.maxArgs >= 0 && len(args) > t.maxArgs {
			return nil, fmt.Errorf("%w: the recipe %s takes %d argument(s), not %d: just would run the others as recipes of their own",
				ErrBadArgs, name, t.maxArgs, len(args))
		}
		return append([]string{"just", "--", name}, args...), nil
	case PrefixMake:
		for _, a := range args {
			m := makeVariable.FindStringSubmatch(a)
			if m == nil {
				return nil, fmt.Errorf("%w: make tasks take variable assignments only (NAME=value), not %q", ErrBadArgs, a)
			}
			if makeOwnVariable(m[1]) {
				return nil, fmt.Errorf("%w: %s is make's own variable (its flags, makefiles or shell), which a task's arguments may not set", ErrBadArgs, m[1])
			}
		}
		return append([]string{"make", "--", name}, args...), nil
	case PrefixProject:
		return projectArgv(t, args)
	case PrefixNPM:
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("open workspace folder %s: %w", dir, err)
		}
		defer root.Close()
		pm := packageManager(root)
		if pm != "npm" && len(args) > 0 {
			// pnpm, yarn and bun take what follows the script's name as
			// their own options too; npm stops at "--".
			return nil, fmt.Errorf("%w: this workspace runs its scripts with %s, which would read arguments as its own options; run the script without arguments", ErrBadArgs, pm)
		}
		return scriptArgv(pm, name, args), nil
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
			return fmt.Errorf("%w: args[%d] holds a NUL byte", ErrBadArgs, i)
		case len(a) > MaxArgBytes:
			return fmt.Errorf("%w: args[%d] is %d bytes, at most %d", ErrBadArgs, i, len(a), MaxArgBytes)
		}
		if err := checkArgChars(i, a); err != nil {
			return err
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
