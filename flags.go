package main

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
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(c.stdout)
		fs.Usage()
		return 0, false
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra %s: %v\n\n", fs.Name(), err)
		fs.SetOutput(c.stderr)
		fs.Usage()
		return 2, false
	}
	return 0, true
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
