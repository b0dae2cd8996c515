package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// newFlagSet returns a flag set whose help is the given text: usage lines,
// a blank line, what the command does, and its flags.
func newFlagSet(name, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags prints errors and help itself
	fs.Usage = func() { fmt.Fprint(fs.Output(), help) }
	return fs
}

// parseFlags parses args into fs. It prints the help on stdout for --help
// (code 0) and an error plus the help on stderr for a bad flag or a stray
// argument (code 2); ok is true when the command should go on.
func parseFlags(fs *flag.FlagSet, c *cli, args []string) (code int, ok bool) {
	if code, ok := parseOnce(fs, c, args); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		return usageError(fs, c, fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	return 0, true
}

// parseInterleaved is parseFlags for commands that take positional
// arguments, with flags before, between or after them (`workspace create
// NAME --project P`), where the flag package alone stops at the first
// positional one. It returns the positional arguments in order.
func parseInterleaved(fs *flag.FlagSet, c *cli, args []string) (positional []string, code int, ok bool) {
	for {
		if code, ok := parseOnce(fs, c, args); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parseOnce parses args into fs up to the first positional argument and
// answers --help and bad flags as parseFlags says.
func parseOnce(fs *flag.FlagSet, c *cli, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(c.stdout)
		fs.Usage()
		return 0, false
	}
	if err != nil {
		return usageError(fs, c, err), false
	}
	return 0, true
}

// usageError prints err and the command's help on stderr and returns the
// exit code of bad usage, 2.
func usageError(fs *flag.FlagSet, c *cli, err error) int {
	fmt.Fprintf(c.stderr, "codehydra %s: %v\n\n", fs.Name(), err)
	fs.SetOutput(c.stderr)
	fs.Usage()
	return 2
}

// subcommand is one subcommand of a command such as `project` or
// `workspace`: its name, the one positional argument it takes (arg, as
// its usage names it; "" for none), and what runs it.
type subcommand struct {
	name string
	arg  string
	run  func(arg string) int
}

// runSubcommand runs the subcommand that positional (the command's
// positional arguments) names, or prints what is wrong with them and
// returns the code of bad usage.
func runSubcommand(fs *flag.FlagSet, c *cli, positional []string, subs []subcommand) int {
	if len(positional) == 0 {
		names := make([]string, len(subs))
		for i, s := range subs {
			names[i] = s.name
		}
		last := len(names) - 1
		return usageError(fs, c, fmt.Errorf("say %s or %s", strings.Join(names[:last], ", "), names[last]))
	}
	for _, s := range subs {
		if s.name != positional[0] {
			continue
		}
		switch {
		case s.arg == "" && len(positional) > 1:
			return usageError(fs, c, fmt.Errorf("unexpected argument %q", positional[1]))
		case s.arg == "":
			return s.run("")
		case len(positional) != 2:
			return usageError(fs, c, fmt.Errorf("%s %s takes one %s", fs.Name(), s.name, s.arg))
		default:
			return s.run(positional[1])
		}
	}
	return usageError(fs, c, fmt.Errorf("unknown %s command %q", fs.Name(), positional[0]))
}

// pathList is a repeatable flag of paths, made absolute as they are parsed
// (relative to the working folder).
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

func (p *pathList) Set(v string) error {
	if v == "" {
		return errors.New("empty path")
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return err
	}
	*p = append(*p, abs)
	return nil
}
