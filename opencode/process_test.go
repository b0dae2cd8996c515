package opencode

import (
	"slices"
	"strings"
	"testing"
)

func TestAgentEnvReplacesInheritedCodehydraVariables(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "FOO=bar=baz",
		"OPENCODE_CONFIG=/elsewhere.json", "CODEHYDRA_MCP_TOKEN=parent-token", "CODEHYDRA_OTHER=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1", "XCODEHYDRA_KEEP=1",
	}
	got := agentEnv(base, "/cfg/codehydra-mcp.json", "/p/ws/feat%x", 4242, "tok")
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "FOO=bar=baz", "OPENCODE_DISABLE_MODELS_FETCH=1", "XCODEHYDRA_KEEP=1",
		"OPENCODE_CONFIG=/cfg/codehydra-mcp.json", "CODEHYDRA_WORKSPACE_PATH=/p/ws/feat%x",
		"CODEHYDRA_MCP_PORT=4242", "CODEHYDRA_MCP_TOKEN=tok",
	}
	if !slices.Equal(got, want) {
		t.Errorf("agentEnv =\n%q\nwant\n%q", got, want)
	}
}

func TestLineWriterSplitsLinesAndCapsLongOnes(t *testing.T) {
	var lines []string
	w := &lineWriter{line: func(l string) { lines = append(lines, l) }}
	for _, chunk := range []string{"first\r\nsec", "ond\n\nthird", "\n", strings.Repeat("x", 3*maxLine), "\nlast"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	w.flush()
	want := []string{"first", "second", "", "third", strings.Repeat("x", maxLine), "last"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}
}

func TestLineRingKeepsTheLastLines(t *testing.T) {
	r := newLineRing(3)
	for _, l := range []string{"1", "2", "3", "4", "5"} {
		r.add(l)
	}
	if got := r.snapshot(); !slices.Equal(got, []string{"3", "4", "5"}) {
		t.Errorf("snapshot = %v", got)
	}
}
