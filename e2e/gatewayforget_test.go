package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/mcp"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A workspace's own instance of a workspace-scoped MCP server runs while
// the workspace does and ends when it is deleted (the built binary's
// serve, a real server-filesystem reached through mcp-stdio).
func TestDeletingAWorkspaceStopsItsOwnMCPServers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fsServer := testenv.RealMCPServer(t, "mcp-server-filesystem")
	bin, fake := buildApp(t)
	t.Cleanup(func() {
		for _, pid := range processesOf(t, fake) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	one := filepath.Join(filepath.Dir(repo), "worktrees", "one")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "one", one)
	mark := "GWFORGET_TEST=" + filepath.Base(t.TempDir())
	_, markValue, _ := strings.Cut(mark, "=")
	set, err := json.Marshal(map[string]any{"opencodeBin": fake, "projects": []string{repo},
		"mcpServers": map[string]any{"fs": map[string]any{"command": fsServer, "scope": "workspace",
			"env": map[string]string{"GWFORGET_TEST": markValue}}}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
	env := os.Environ()
	app := launch(t, bin, env)

	var text string
	app.poll(t, "one's call of its filesystem server", func() bool {
		cs, _, err := stdioClient(t, bin, env, "--workspace", one)
		if err != nil {
			return false
		}
		defer cs.Close()
		// Until the gateway has listed the server's tools (a probe
		// instance starts at launch), the tool is unknown.
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "fs__list_allowed_directories", Arguments: map[string]any{}})
		if err != nil {
			return false
		}
		text = mcp.ResultText(res)
		return !res.IsError && strings.Contains(text, one)
	})
	if n := testenv.ProcessesWith(t, mark); n == 0 {
		t.Fatalf("no server process carries %s after a call (answer %q)", mark, text)
	}

	if out, err := exec.Command(bin, "workspace", "delete", one).CombinedOutput(); err != nil {
		t.Fatalf("workspace delete: %v\n%s", err, out)
	}
	app.poll(t, "one's filesystem server to end with it", func() bool { return testenv.ProcessesWith(t, mark) == 0 })
}
