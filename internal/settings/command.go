package settings

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// PathPlaceholder in an argument of editorCommand or terminalCommand
// stands for the folder to open.
const PathPlaceholder = "{path}"

// SplitCommand splits a command line from the settings into its words,
// the way the app runs it: without a shell. Words are separated by spaces;
// '…' or "…" keep spaces (and the other kind of quote) inside a word.
// There are no variables, globs, pipes or escapes. A blank line gives no
// words and no error.
func SplitCommand(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case r == '\n' || r == '\r':
			return nil, errors.New("it holds a line break: write the command on one line")
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("a %c quote is not closed", quote)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// CheckCommand reports what is wrong with a command line of the settings,
// as a sentence naming key: it must split, and its program must be a
// command name looked up on PATH or an absolute path. A relative path
// would be found from the folder being opened, whose content comes from a
// repository.
func CheckCommand(key, line string) error {
	words, err := SplitCommand(line)
	if err != nil {
		return fmt.Errorf("%s %q cannot be read: %w", key, line, err)
	}
	if len(words) == 0 {
		return nil
	}
	prog := words[0]
	switch {
	case prog == "":
		return fmt.Errorf("%s %q starts with an empty word: begin with the program to run", key, line)
	case strings.Contains(prog, PathPlaceholder):
		return fmt.Errorf("%s %q starts with %s: begin with the program to run, and put %s in one of its arguments", key, line, PathPlaceholder, PathPlaceholder)
	case strings.ContainsAny(prog, `/\`) && !filepath.IsAbs(prog):
		return fmt.Errorf("%s %q starts with a relative path: use a command name looked up on PATH, or the program's absolute path", key, line)
	}
	return nil
}

// validateCommands checks the commands that open a workspace's folder.
func (s Settings) validateCommands() []error {
	var errs []error
	for _, c := range []struct{ key, line string }{
		{"editorCommand", s.EditorCommand},
		{"terminalCommand", s.TerminalCommand},
	} {
		if err := CheckCommand(c.key, c.line); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
