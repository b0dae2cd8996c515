package settings

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// DefaultRemote is the remote a project's workspaces are pushed to when
// its projectSetup names none.
const DefaultRemote = "origin"

// The placeholders of prCommand, each replaced inside the word it is in.
const (
	BranchPlaceholder = "{branch}" // the workspace's branch, as pushed
	BasePlaceholder   = "{base}"   // the branch of the remote the pull request goes into
	RemotePlaceholder = "{remote}" // the remote pushed to
	TitlePlaceholder  = "{title}"  // the title the caller gave ("" when none)
	BodyPlaceholder   = "{body}"   // the body the caller gave ("" when none)
)

// PRPlaceholders are every placeholder prCommand may hold.
var PRPlaceholders = []string{BranchPlaceholder, BasePlaceholder, RemotePlaceholder, TitlePlaceholder, BodyPlaceholder}

// The pull request commands used when prCommand is "" and gh is on PATH:
// gh fills the title and body from the commits, or takes those given.
const (
	DefaultPRCommand       = "gh pr create --head {branch} --base {base} --fill"
	DefaultPRCommandTitled = "gh pr create --head {branch} --base {base} --title {title} --body {body}"
)

// PRValues are what the placeholders of prCommand stand for.
type PRValues struct {
	Branch, Base, Remote, Title, Body string
}

// placeholderRe finds what reads as a placeholder, known or not.
var placeholderRe = regexp.MustCompile(`\{[A-Za-z0-9_]*\}`)

// ExpandPRCommand splits line into words, as SplitCommand does, and then
// replaces each placeholder inside the word it is in: a value with spaces
// or quotes stays one argument, and a placeholder inside a value is left
// as it is. line must pass CheckPRCommand.
func ExpandPRCommand(line string, v PRValues) ([]string, error) {
	words, err := SplitCommand(line)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, errors.New("the pull request command is empty")
	}
	r := strings.NewReplacer(BranchPlaceholder, v.Branch, BasePlaceholder, v.Base, RemotePlaceholder, v.Remote,
		TitlePlaceholder, v.Title, BodyPlaceholder, v.Body)
	for i, w := range words {
		words[i] = r.Replace(w)
	}
	return words, nil
}

// CheckPRCommand reports what is wrong with prCommand: "" is fine (the
// default); else it must be a command line CheckCommand takes, with a
// program that is no placeholder and only placeholders of PRPlaceholders.
func CheckPRCommand(line string) error {
	if line == "" {
		return nil
	}
	if strings.TrimSpace(line) == "" {
		return errors.New(`prCommand is blank: give the command that opens a pull request, or "" for gh's`)
	}
	if err := CheckCommand("prCommand", line); err != nil {
		return err
	}
	words, _ := SplitCommand(line)
	if placeholderRe.MatchString(words[0]) {
		return fmt.Errorf("prCommand %q starts with a placeholder: begin with the program to run, and put placeholders in its arguments", line)
	}
	for _, w := range words {
		for _, ph := range placeholderRe.FindAllString(w, -1) {
			if !slices.Contains(PRPlaceholders, ph) {
				return fmt.Errorf("prCommand %q holds the unknown placeholder %s: use %s", line, ph, strings.Join(PRPlaceholders, ", "))
			}
		}
	}
	return nil
}

// CheckRemote reports what is wrong with a remote's name: "" is fine
// (DefaultRemote); else git must be able to take it as a remote's name,
// and it must not read as an option.
func CheckRemote(name string) error {
	switch {
	case name == "":
		return nil
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("remote %q starts with -: name a git remote such as origin", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0,
		strings.ContainsAny(name, `~^:?*[\`), strings.Contains(name, ".."), strings.Contains(name, "@{"),
		strings.HasPrefix(name, "/"), strings.HasSuffix(name, "/"), strings.HasSuffix(name, "."), strings.HasSuffix(name, ".lock"):
		return fmt.Errorf("remote %q is not a name git takes: name a git remote such as origin (see git remote)", name)
	}
	return nil
}

// RemoteFor returns the remote that the workspaces of the project at
// path are pushed to.
func (s Settings) RemoteFor(path string) string {
	p, ok := s.ProjectSetup[path]
	if !ok {
		p = s.ProjectSetup[filepath.Clean(path)]
	}
	if p.Remote == "" {
		return DefaultRemote
	}
	return p.Remote
}

// validatePullRequests checks prCommand; each project's remote is checked
// with its projectSetup.
func (s Settings) validatePullRequests() []error {
	if err := CheckPRCommand(s.PRCommand); err != nil {
		return []error{err}
	}
	return nil
}
