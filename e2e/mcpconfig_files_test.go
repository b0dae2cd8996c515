//go:build linux

package e2e

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/mcp"
)

// TestClaudeDesktopConfigGivesTheWorkspaceFileTools runs what
// `mcp-config --client claude-desktop --workspace W` prints, as Claude
// Desktop would, against a running serve: the file tools are listed and
// read W, and only W (issue 15, point 5).
func TestClaudeDesktopConfigGivesTheWorkspaceFileTools(t *testing.T) {
	bin, env, app, _, one := serveOneWorkspace(t)
	defer app.stop(t)
	cmd := exec.Command(bin, "mcp-config", "--client", mcp.ClientClaudeDesktop, "--workspace", one)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-config: %v", err)
	}
	argv := stdioCommandOf(t, mcp.ClientClaudeDesktop, out)
	run := exec.Command(argv[0], argv[1:]...)
	run.Env = env
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-ai", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: run}, nil)
	if err != nil {
		t.Fatalf("run the printed config: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{mcp.ToolReadFile, mcp.ToolListDirectory, mcp.ToolGetContext} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}
	call := func(tool string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return mcp.ResultText(res), res.IsError
	}
	if got, isErr := call(mcp.ToolReadFile, map[string]any{"path": "README.md"}); isErr || !strings.Contains(got, `"content":"hello\n"`) {
		t.Fatalf("read README.md = %s", got)
	}
	if got, isErr := call(mcp.ToolReadFile, map[string]any{"path": "../../repo/README.md"}); !isErr || !strings.Contains(got, "Path outside workspace") {
		t.Fatalf("read the main checkout's README = %s, want forbidden", got)
	}
	if got, isErr := call(mcp.ToolGetContext, map[string]any{}); isErr || !strings.Contains(got, `"branch":"one"`) {
		t.Fatalf("context = %s", got)
	}
}
