package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Rule is one Landlock rule: Access to the file or folder at Path and all
// below it. Dir says whether Path is a folder (a file takes only the
// rights that apply to files).
type Rule struct {
	Path   string
	Access Access
	Dir    bool
}

// maxRules bounds the rules one policy expands to: a grant is expanded
// only along the way to a hole, so this is reached only by a folder on
// that way with this many entries.
const maxRules = 20000

// Expand turns p into the rules to add: each grant as it is, unless a
// denied folder lies strictly inside it; such a grant becomes a rule for
// each entry of the granted folder but the denied ones, and so on down
// to each hole. The expanded folders themselves get no rule, so their
// entries cannot be listed and nothing can be made in them, and an entry
// made in them later is not granted either, which keeps a folder denied
// before it exists. Symbolic links met on the way get no rule: the
// kernel checks the file a link leads to by its own path. Grants and
// denials that do not exist are left out.
func Expand(p Policy) ([]Rule, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var rules []Rule
	for _, g := range p.Grants {
		fi, err := os.Stat(g.Path)
		if err != nil {
			continue // a grant of nothing
		}
		if denied(p.Deny, g.Path) {
			continue // a grant of what is itself denied grants nothing
		}
		holes := holesIn(p.Deny, g.Path)
		if len(holes) == 0 || !fi.IsDir() {
			rules = append(rules, Rule{Path: g.Path, Access: g.Access, Dir: fi.IsDir()})
			continue
		}
		var err2 error
		rules, err2 = expandDir(rules, g.Path, g.Access, holes)
		if err2 != nil {
			return nil, err2
		}
		if len(rules) > maxRules {
			return nil, fmt.Errorf("the sandbox policy expands to more than %d rules (a folder on the way to a denied one has too many entries)", maxRules)
		}
	}
	return rules, nil
}

// denied reports whether path is one of the denied paths.
func denied(deny []string, path string) bool { return slices.Contains(deny, path) }

// holesIn returns the denied paths strictly inside dir.
func holesIn(deny []string, dir string) []string {
	var out []string
	for _, d := range deny {
		if d != dir && Within(d, dir) {
			out = append(out, d)
		}
	}
	return out
}

// expandDir adds the rules for the entries of dir but the holes (each
// strictly inside dir), recursing into entries with holes inside.
func expandDir(rules []Rule, dir string, access Access, holes []string) ([]Rule, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		// A folder we cannot list gets no rule: its entries stay
		// denied, which errs on the safe side.
		return rules, nil
	}
	for _, e := range entries {
		child := filepath.Join(dir, e.Name())
		if denied(holes, child) || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		inner := holesIn(holes, child)
		if len(inner) > 0 && e.IsDir() {
			if rules, err = expandDir(rules, child, access, inner); err != nil {
				return nil, err
			}
			continue
		}
		rules = append(rules, Rule{Path: child, Access: access, Dir: e.IsDir()})
		if len(rules) > maxRules {
			return rules, nil
		}
	}
	return rules, nil
}
