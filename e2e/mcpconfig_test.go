//go:build linux

package e2e

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// TestAgentsAndWorkspaceConfigsCarryTheWorkspacesTokenNotTheMaster runs
// the built binary with the fake opencode as the agents: the token in an
// agent's environment, and the one `mcp-config --workspace W` prints, are
// W's own token — not the master token — and it works for W and for
// nothing that is not W's.
func TestAgentsAndWorkspaceConfigsCarryTheWorkspacesTokenNotTheMaster(t *testing.T) {
	bin, env, repo, wts, app := launchWithWorktrees(t, "one", "two")
	one, two := wts[0], wts[1]
	app.agentsReady(t, []string{one, two})
	master, err := mcp.ReadToken(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}

	// The config mcp-config prints for one.
	out, entry, token := mcpConfigFor(t, bin, env, one)
	if strings.Contains(string(out), master) || token == "" {
		t.Fatalf("the config of a workspace holds the master token, or no token:\n%s", out)
	}
	if entry.Headers["X-Workspace-Path"] != one {
		t.Fatalf("the config names the workspace %q, want %s", entry.Headers["X-Workspace-Path"], one)
	}

	// The agent of one was given the same token, and the master token
	// reaches no agent.
	for _, ws := range []string{one, two} {
		agentEnv := environOf(t, agentRecord(t, ws).PID)
		got := agentEnv["CODEHYDRA_MCP_TOKEN"]
		if got == "" || got == master || strings.Contains(strings.Join(slices.Collect(maps.Values(agentEnv)), "\n"), master) {
			t.Fatalf("the agent of %s has CODEHYDRA_MCP_TOKEN %q and the master token in its environment: %v", ws, got, got == master)
		}
		if (ws == one) != (got == token) {
			t.Fatalf("the agent of %s has the token %q; mcp-config --workspace %s printed %q", ws, got, one, token)
		}
		app.poll(t, "the agent of "+ws+" to connect with its token", func() bool { return agentMCPStatus(t, agentRecord(t, ws)) == "connected" })
	}

	// The printed config works for one, and for nothing that is not one's.
	r, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: entry.URL, Token: token, WorkspacePath: one})
	if err != nil {
		t.Fatalf("dial with the printed config: %v", err)
	}
	defer r.Close()
	raw, err := r.Call(t.Context(), mcp.ToolGetStatus, nil)
	if err != nil || !strings.Contains(string(raw), `"path":"`+one+`"`) {
		t.Fatalf("%s with the printed config = %s, %v", mcp.ToolGetStatus, raw, err)
	}
	_, err = r.Call(t.Context(), mcp.ToolProjectRemove, map[string]any{"path": repo})
	if te := (*mcp.ToolError)(nil); !errors.As(err, &te) || te.Code != workspace.CodeForbidden {
		t.Fatalf("project_remove with the printed config: %v, want forbidden", err)
	}
	other, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: entry.URL, Token: token, WorkspacePath: two})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Call(t.Context(), mcp.ToolSetMetadata, map[string]any{"key": "stolen", "value": "yes"})
	if te := (*mcp.ToolError)(nil); !errors.As(err, &te) || te.Code != workspace.CodeForbidden {
		t.Fatalf("set metadata on two with one's token: %v, want forbidden", err)
	}
	if got := testenv.Git(t, repo, "config", "--list", "--local"); strings.Contains(got, "stolen") {
		t.Fatalf("two's metadata changed:\n%s", got)
	}
	if _, err := app.call(t, "", mcp.ToolProjectList, nil); err != nil {
		t.Fatalf("the app no longer answers the master token: %v", err)
	}
	app.stop(t)
}
