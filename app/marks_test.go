package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeMark is a row of the README's table of marks: | `mark` | phase | meaning |.
var readmeMark = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^|]+?) \\| [^|]+ \\|$")

// TestREADMEListsEveryMarkTheMenuShows keeps the README's table of marks
// and the code's phases from drifting apart: every phase that menu.go
// declares is in Phases(), and the README has a row for each with its
// mark, and no other row.
func TestREADMEListsEveryMarkTheMenuShows(t *testing.T) {
	declared := declaredPhases(t)
	var listed []string
	for _, p := range Phases() {
		listed = append(listed, string(p))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Errorf("menu.go declares the phases %q, Phases() lists %q", declared, listed)
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[Phase]string{}
	for _, m := range readmeMark.FindAllStringSubmatch(marksTable(t, string(readme)), -1) {
		rows[Phase(m[2])] = m[1]
	}
	for _, p := range Phases() {
		mark, ok := rows[p]
		switch {
		case !ok:
			t.Errorf("the README's table of marks has no row for %q (mark %s)", p, p.Mark())
		case mark != p.Mark():
			t.Errorf("the README gives %q the mark %s; the menu shows %s", p, mark, p.Mark())
		}
		delete(rows, p)
	}
	for p, mark := range rows {
		t.Errorf("the README lists %s %q, a phase the menu does not have", mark, p)
	}
}

// marksTableHeader starts the README's table of marks.
const marksTableHeader = "| Mark | Phase | Meaning |\n"

// marksTable is the README's table of marks: its header and the table
// lines that follow it.
func marksTable(t *testing.T, readme string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, marksTableHeader)
	if !ok {
		t.Fatalf("the README has no table of marks (a line %q)", strings.TrimSpace(marksTableHeader))
	}
	var table strings.Builder
	for line := range strings.Lines(rest) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		table.WriteString(line)
	}
	return table.String()
}

// declaredPhases are the values of the constants of type Phase in menu.go.
func declaredPhases(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "menu.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Phase" {
			return true
		}
		for _, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				out = append(out, lit.Value[1:len(lit.Value)-1])
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("found no Phase constants in menu.go")
	}
	return out
}
