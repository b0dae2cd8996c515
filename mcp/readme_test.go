package mcp

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeTools reads the README's "MCP tools" section (up to the next
// top-level heading) and returns the tools named by the first column of its
// reference table, and the tool names in the cells of its "who may call"
// table.
func readmeTools(t *testing.T) (reference, who []string) {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## MCP tools\n")
	if !ok {
		t.Fatal(`README.md has no "## MCP tools" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	for line := range strings.SplitSeq(section, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			reference = append(reference, m[1])
		}
	}
	_, whoTable, ok := strings.Cut(section, "\n| who may call | tools |\n")
	if !ok {
		t.Fatal(`README.md's MCP tools section has no "| who may call | tools |" table`)
	}
	whoTable, _, _ = strings.Cut(whoTable, "\n\n")
	named := regexp.MustCompile("`([a-z_]+)`")
	for line := range strings.SplitSeq(whoTable, "\n") {
		cells := strings.Split(line, "|")
		for _, m := range named.FindAllStringSubmatch(cells[len(cells)-2], -1) {
			who = append(who, m[1])
		}
	}
	return reference, who
}

// TestReadmeListsEveryTool holds the README's tools reference to the tools
// the server registers: each has a row of the reference table and a place
// in the "who may call" table, and the reference names no tool that is gone.
func TestReadmeListsEveryTool(t *testing.T) {
	h := newHarness(t)
	res, err := h.session("").ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	reference, who := readmeTools(t)
	var registered []string
	for _, tool := range res.Tools {
		registered = append(registered, tool.Name)
		if !slices.Contains(reference, tool.Name) {
			t.Errorf("README.md's MCP tools table has no row for %s (name, input, output, errors)", tool.Name)
		}
		if !slices.Contains(who, tool.Name) {
			t.Errorf(`README.md's "who may call" table does not name %s`, tool.Name)
		}
	}
	for _, name := range reference {
		// The gateway's row stands for every tool of the user's own servers.
		if name != "<server>__<tool>" && !slices.Contains(registered, name) {
			t.Errorf("README.md's MCP tools table has a row for %s, which the server does not register", name)
		}
	}
	if len(registered) == 0 {
		t.Fatal("the server registered no tools")
	}
}
