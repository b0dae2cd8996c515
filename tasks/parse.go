package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// maxTasksPerFile bounds what one file adds to a listing.
const maxTasksPerFile = 500

// maxScriptShown bounds the script text quoted in a Command.
const maxScriptShown = 200

var (
	// justRecipe is the start of a recipe line: an optional '@' (quiet)
	// and the recipe's name.
	justRecipe = regexp.MustCompile(`^@?([A-Za-z_][A-Za-z0-9_-]*)`)
	// justKeywords start lines of a justfile that are not recipes.
	justKeywords = []string{"alias", "export", "import", "mod", "set", "unexport"}
	// makeTargetName is a target this package lists: plain file-like names,
	// no pattern (%), variable ($), special or hidden (leading '.') target.
	makeTargetName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./+-]*$`)
	// makeAssignment is a variable assignment, also after a target's colon
	// (a target-specific variable, which declares no rule).
	makeAssignment = regexp.MustCompile(`^\s*(override\s+|export\s+|private\s+)*[A-Za-z0-9_.-]+\s*(:::?=|[+?!]?=)`)
)

// justTasks lists the public recipes of a justfile: lines at column 0 that
// start with a name and whose first ':' outside quotes is not ':='.
// Recipes whose name starts with '_' or that carry [private] are left out,
// as `just --list` leaves them out. Text inside multi-line strings and
// backticks is skipped. A recipe defined twice is what just runs: its
// last definition under `set allow-duplicate-recipes` (wherever in the
// file), else an error, as just refuses such a justfile.
func justTasks(data []byte) ([]Task, error) {
	type recipe struct {
		name          string
		private       bool
		maxArgs, line int
	}
	var defs []recipe
	private, allowDuplicates := false, false
	inBlock := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if inBlock != "" || opensBlock(line) != "" {
			inBlock = toggleBlocks(line, inBlock)
			continue
		}
		switch {
		case line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#':
			continue
		case line[0] == '[':
			private = private || strings.Contains(line, "private")
			continue
		}
		if on, ok := justDuplicatesSetting(line); ok {
			allowDuplicates = on
		}
		if name, ok := justRecipeName(line); ok {
			defs = append(defs, recipe{name: name, private: private || strings.HasPrefix(name, "_"), maxArgs: justParams(line), line: n})
		}
		private = false
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// The definition just runs, at the place of the first.
	var order []string
	last := map[string]recipe{}
	for _, d := range defs {
		if first, ok := last[d.name]; !ok {
			order = append(order, d.name)
		} else if !allowDuplicates {
			return nil, fmt.Errorf("the recipe %s is defined on line %d and again on line %d, and the justfile does not `set allow-duplicate-recipes`: just refuses it", d.name, first.line, d.line)
		}
		last[d.name] = d
	}
	var out []Task
	for _, name := range order {
		if d := last[name]; !d.private {
			out = append(out, Task{Name: PrefixJust + ":" + name, Command: "just -- " + name, maxArgs: d.maxArgs})
		}
		if len(out) >= maxTasksPerFile {
			break
		}
	}
	return out, nil
}

// justDuplicatesSetting says whether line is just's `set
// allow-duplicate-recipes` (bare or `:= true`: on; `:= false`: off).
func justDuplicatesSetting(line string) (on, ok bool) {
	rest, ok := strings.CutPrefix(line, "set ")
	if !ok {
		return false, false
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t"), "allow-duplicate-recipes")
	if !ok {
		return false, false
	}
	rest = strings.TrimSpace(rest)
	if i := strings.Index(rest, "#"); i >= 0 {
		rest = strings.TrimSpace(rest[:i])
	}
	switch strings.Join(strings.Fields(rest), " ") {
	case "", ":= true":
		return true, true
	case ":= false":
		return false, true
	}
	return false, false
}

// justRecipeName is the recipe a justfile line declares, if it declares
// one.
func justRecipeName(line string) (string, bool) {
	m := justRecipe.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	name, rest := m[1], line[len(m[0]):]
	if slices.Contains(justKeywords, name) && strings.HasPrefix(rest, " ") {
		return "", false
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != ':' {
		return "", false
	}
	colon := colonOutsideQuotes(rest)
	if colon < 0 || strings.HasPrefix(rest[colon:], ":=") {
		return "", false
	}
	return name, true
}

// justParams is how many arguments the recipe that line declares takes:
// its parameters, or -1 when one of them is variadic (+name, *name). An
// argument past them would be taken by just as the name of another recipe
// to run.
func justParams(line string) int {
	m := justRecipe.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	rest := line[len(m[0]):]
	colon := colonOutsideQuotes(rest)
	if colon < 0 {
		return 0
	}
	n := 0
	for _, p := range fieldsOutsideQuotes(rest[:colon]) {
		p = strings.TrimPrefix(p, "$")
		if strings.HasPrefix(p, "+") || strings.HasPrefix(p, "*") {
			return -1
		}
		n++
	}
	return n
}

// fieldsOutsideQuotes splits s at blanks outside quotes and parentheses
// (a default value may be a quoted string or an expression in
// parentheses).
func fieldsOutsideQuotes(s string) []string {
	var out []string
	var cur strings.Builder
	var quote byte
	depth := 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case (c == ' ' || c == '\t') && depth == 0:
			flush()
			continue
		}
		cur.WriteByte(c)
	}
	flush()
	return out
}

// colonOutsideQuotes is the index of the first ':' of s outside '…' and
// "…", or -1.
func colonOutsideQuotes(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '\'' || c == '"':
			quote = c
		case c == ':':
			return i
		}
	}
	return -1
}

// justBlocks open and close multi-line strings and commands in a
// justfile.
var justBlocks = []string{"'''", `"""`, "```"}

// opensBlock is the delimiter of a multi-line string that line leaves
// open, or "".
func opensBlock(line string) string { return toggleBlocks(line, "") }

// toggleBlocks follows the multi-line delimiters of line, starting inside
// the block open (or "" outside any), and returns the block open at its
// end.
func toggleBlocks(line, open string) string {
	for i := 0; i < len(line); i++ {
		if open != "" {
			if strings.HasPrefix(line[i:], open) {
				i += len(open) - 1
				open = ""
			}
			continue
		}
		for _, d := range justBlocks {
			if strings.HasPrefix(line[i:], d) {
				open = d
				i += len(d) - 1
				break
			}
		}
	}
	return open
}

// makeTasks lists the explicit targets of a Makefile: lines at column 0
// (not recipe lines, not continuations, not inside define…endef) of the
// form "targets: prerequisites" or "targets:: …", without pattern,
// variable, special or hidden targets and without assignments.
func makeTasks(data []byte) ([]Task, error) {
	var out []Task
	seen := map[string]bool{}
	inDefine, continued := false, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxFileBytes)
	for sc.Scan() {
		line := sc.Text()
		wasContinued := continued
		continued = strings.HasSuffix(line, `\`)
		trimmed := strings.TrimSpace(line)
		switch {
		case wasContinued:
			continue
		case inDefine:
			inDefine = trimmed != "endef" && !strings.HasPrefix(trimmed, "endef ")
			continue
		case strings.HasPrefix(trimmed, "define ") || trimmed == "define":
			inDefine = true
			continue
		case line == "" || line[0] == '\t' || line[0] == '#' || makeAssignment.MatchString(line):
			continue
		}
		for _, name := range makeTargets(line) {
			if !seen[name] && len(out) < maxTasksPerFile {
				seen[name] = true
				out = append(out, Task{Name: PrefixMake + ":" + name, Command: "make -- " + name})
			}
		}
	}
	return out, sc.Err()
}

// makeTargets are the listable targets a Makefile rule line declares.
func makeTargets(line string) []string {
	head, rest, ok := strings.Cut(line, ":")
	if !ok || strings.HasPrefix(rest, "=") || makeAssignment.MatchString(strings.TrimPrefix(rest, ":")) {
		return nil
	}
	var names []string
	for _, f := range strings.Fields(head) {
		if !makeTargetName.MatchString(f) {
			// One odd name ($(VAR), %.o, .PHONY) makes the whole rule
			// something this parser does not claim to understand.
			return nil
		}
		names = append(names, f)
	}
	return names
}

// npmTasks lists package.json's scripts, to be run with the package
// manager whose lockfile the folder has.
func npmTasks(root *os.Root) func([]byte) ([]Task, error) {
	return func(data []byte) ([]Task, error) {
		var pkg struct {
			Scripts map[string]any `json:"scripts"`
		}
		if err := json.Unmarshal(data, &pkg); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		pm := packageManager(root)
		var out []Task
		for name, v := range pkg.Scripts {
			script, ok := v.(string)
			if !ok || name == "" || strings.ContainsAny(name, "\x00\n\r") {
				continue
			}
			if len(script) > maxScriptShown {
				script = strings.ToValidUTF8(script[:maxScriptShown], "") + "…"
			}
			out = append(out, Task{
				Name:    PrefixNPM + ":" + name,
				Command: strings.Join(scriptArgv(pm, name, nil), " ") + " (" + script + ")",
			})
		}
		slices.SortFunc(out, func(a, b Task) int { return strings.Compare(a.Name, b.Name) })
		if len(out) > maxTasksPerFile {
			out = out[:maxTasksPerFile]
		}
		return out, nil
	}
}
