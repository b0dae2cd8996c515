package prepare

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
)

// WorktreeIncludeFile is the file at a repository's root that lists, in
// gitignore's syntax, the untracked files to copy into each new worktree
// (the format other worktree tools read).
const WorktreeIncludeFile = ".worktreeinclude"

// maxIncludeBytes bounds what is read of a .worktreeinclude.
const maxIncludeBytes = 64 << 10

// includeRule is one pattern line of a .worktreeinclude.
type includeRule struct {
	re      *regexp.Regexp
	negate  bool // "!pattern": what it matches is not copied
	dirOnly bool // "pattern/": it matches folders only
}

// includeRules are the patterns of a .worktreeinclude, in order.
type includeRules []includeRule

// parseIncludeRules reads gitignore syntax: blank lines and "#" comments
// are skipped, "!" negates, a trailing "/" matches folders only, a "/" at
// the start or in the middle anchors the pattern at the root (else it
// matches at any depth), "*" and "?" stay within one path element, "**"
// spans any number of them, "\" escapes the next character.
func parseIncludeRules(text string) includeRules {
	var rules includeRules
	for line := range strings.SplitSeq(text, "\n") {
		line = trimTrailingSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r includeRule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			line = strings.TrimPrefix(line, "/")
		} else {
			line = "**/" + line
		}
		re, err := regexp.Compile("^" + globRegexp(line) + "$")
		if err != nil {
			continue // an unclosed [ matches nothing, as in git
		}
		r.re = re
		rules = append(rules, r)
	}
	return rules
}

// trimTrailingSpace drops trailing spaces that no "\" escapes.
func trimTrailingSpace(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// globRegexp turns an anchored gitignore glob into a regular expression.
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		atElementStart := i == 0 || glob[i-1] == '/'
		switch {
		case strings.HasPrefix(glob[i:], "**/") && atElementStart:
			b.WriteString("(?:.*/)?")
			i += 2
		case glob[i:] == "**" && atElementStart:
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(string(glob[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// Match reports whether the file at rel ("/"-separated, relative to the
// root) is to be copied: the last rule that matches it, or a folder
// above it, decides. Unlike .gitignore, a "!" rule can take back a file
// inside a folder that an earlier rule named.
func (rs includeRules) Match(rel string) bool {
	in := false
	for _, r := range rs {
		if r.matches(rel) {
			in = !r.negate
		}
	}
	return in
}

// matches reports whether r matches the file rel or a folder above it.
func (r includeRule) matches(rel string) bool {
	if !r.dirOnly && r.re.MatchString(rel) {
		return true
	}
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if r.re.MatchString(dir) {
			return true
		}
	}
	return false
}

// readIncludeRules reads the .worktreeinclude at the root of the
// checkout opened as root; none when there is no such regular file
// inside it (a symlink out of the checkout is not followed).
func readIncludeRules(root *os.Root) (includeRules, error) {
	f, err := root.Open(WorktreeIncludeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", WorktreeIncludeFile, err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", WorktreeIncludeFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIncludeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", WorktreeIncludeFile, err)
	}
	if len(b) > maxIncludeBytes {
		return nil, fmt.Errorf("%s is larger than %d KiB", WorktreeIncludeFile, maxIncludeBytes>>10)
	}
	return parseIncludeRules(string(b)), nil
}
