package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// ServerName is the name under which client configurations list CodeHydra.
const ServerName = "codehydra"

// Client names accepted by RenderClientConfig.
const (
	ClientOpencode      = "opencode"
	ClientClaudeCode    = "claude-code"
	ClientClaudeDesktop = "claude-desktop"
)

// Clients lists the MCP clients RenderClientConfig knows, in the order
// menus show them.
func Clients() []string { return []string{ClientOpencode, ClientClaudeCode, ClientClaudeDesktop} }

// ClientTitle is the name a person knows client by ("Claude Code" for
// claude-code); an unknown client is returned as it is.
func ClientTitle(client string) string {
	switch client {
	case ClientOpencode:
		return "OpenCode"
	case ClientClaudeCode:
		return "Claude Code"
	case ClientClaudeDesktop:
		return "Claude Desktop"
	}
	return client
}

// MCPRemoteVersion is the mcp-remote bridge that Claude Desktop's config
// runs through npx. It is pinned: an unpinned npx name runs whatever the
// registry serves that day, with the token in its environment. 0.15.1 was
// checked against this server (initialize, tools/call through the bridge).
const MCPRemoteVersion = "0.15.1"

// ClientConfig is what an MCP client needs to reach the running server.
type ClientConfig struct {
	// URL is the endpoint, e.g. http://127.0.0.1:4321/mcp.
	URL string
	// Token is the access token, sent as "Authorization: Bearer <token>".
	Token string
	// WorkspacePath is sent as X-Workspace-Path; "" leaves the header out,
	// so workspace_* tools answer invalid-input while project_list and
	// workspace_create work.
	WorkspacePath string
}

// RenderClientConfig returns a configuration file (JSON) for client with
// the literal URL, token and workspace of c, ready to use as printed:
//   - opencode: an opencode.json with a "remote" MCP server (DESIGN.md's
//     shape, with values instead of {env:…} placeholders);
//   - claude-code: a .mcp.json with an "http" server;
//   - claude-desktop: a claude_desktop_config.json entry. Claude Desktop
//     only starts stdio servers, so the entry runs the mcp-remote bridge
//     through npx (Node.js needed); the header values travel in env so that
//     no argument contains a space (Claude Desktop on Windows splits them).
func RenderClientConfig(client string, c ClientConfig) ([]byte, error) {
	headers := map[string]string{"Authorization": "Bearer " + c.Token}
	ws := filepath.ToSlash(c.WorkspacePath)
	if ws != "" {
		headers[WorkspaceHeader] = ws
	}
	var doc any
	switch client {
	case ClientOpencode:
		type remote struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
			Enabled bool              `json:"enabled"`
		}
		doc = struct {
			Schema string            `json:"$schema"`
			MCP    map[string]remote `json:"mcp"`
		}{
			Schema: "https://opencode.ai/config.json",
			MCP:    map[string]remote{ServerName: {Type: "remote", URL: c.URL, Headers: headers, Enabled: true}},
		}
	case ClientClaudeCode:
		type server struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		}
		doc = map[string]any{"mcpServers": map[string]server{ServerName: {Type: "http", URL: c.URL, Headers: headers}}}
	case ClientClaudeDesktop:
		type server struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		args := []string{"-y", "mcp-remote@" + MCPRemoteVersion, c.URL, "--transport", "http-only",
			"--header", "Authorization:${CODEHYDRA_AUTHORIZATION}"}
		env := map[string]string{"CODEHYDRA_AUTHORIZATION": "Bearer " + c.Token}
		if ws != "" {
			args = append(args, "--header", WorkspaceHeader+":${CODEHYDRA_WORKSPACE_PATH}")
			env["CODEHYDRA_WORKSPACE_PATH"] = ws
		}
		doc = map[string]any{"mcpServers": map[string]server{ServerName: {Command: "npx", Args: args, Env: env}}}
	default:
		return nil, fmt.Errorf("unknown MCP client %q; choose one of %v", client, Clients())
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Paths may hold '&', '<' or '>'; the file is not HTML.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode %s config: %w", client, err)
	}
	return buf.Bytes(), nil
}
