package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
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

// ClientConfig is what an MCP client needs to reach the running server.
type ClientConfig struct {
	// Command, when set, is the absolute path of the codehydra binary: the
	// config then runs "Command mcp-stdio [--workspace WorkspacePath]",
	// which finds the running instance each time it starts, and holds
	// neither URL nor token.
	Command string
	// URL is the endpoint, e.g. http://127.0.0.1:4321/mcp (without
	// Command).
	URL string
	// Token is the access token, sent as "Authorization: Bearer <token>"
	// (without Command).
	Token string
	// WorkspacePath names the workspace the client acts on; "" for none,
	// so workspace_* tools answer invalid-input while project_list and
	// workspace_create work.
	WorkspacePath string
}

// StdioArgs are the arguments of codehydra that serve a client on stdio,
// acting on workspace ("" for the user's own client).
func StdioArgs(workspace string) []string {
	if workspace == "" {
		return []string{"mcp-stdio"}
	}
	return []string{"mcp-stdio", "--workspace", workspace}
}

// RenderClientConfig returns a configuration file (JSON) for client,
// ready to use as printed. With c.Command it runs codehydra mcp-stdio:
//   - opencode: an opencode.json with a "local" MCP server;
//   - claude-code: a .mcp.json with a "stdio" server;
//   - claude-desktop: a claude_desktop_config.json entry.
//
// Without it, it holds c's URL and token (HTTP): opencode's "remote" server
// (docs/DESIGN.md's shape, with values instead of {env:…} placeholders) or
// Claude Code's "http" server. Claude Desktop's config file starts only
// commands, so it has no HTTP form.
func RenderClientConfig(client string, c ClientConfig) ([]byte, error) {
	var doc any
	var err error
	if c.Command != "" {
		doc, err = stdioConfig(client, c)
	} else {
		doc, err = httpConfig(client, c)
	}
	if err != nil {
		return nil, err
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

// stdioConfig is client's config that runs codehydra mcp-stdio.
func stdioConfig(client string, c ClientConfig) (any, error) {
	args := StdioArgs(c.WorkspacePath)
	switch client {
	case ClientOpencode:
		type local struct {
			Type    string   `json:"type"`
			Command []string `json:"command"`
			Enabled bool     `json:"enabled"`
		}
		return struct {
			Schema string           `json:"$schema"`
			MCP    map[string]local `json:"mcp"`
		}{
			Schema: "https://opencode.ai/config.json",
			MCP:    map[string]local{ServerName: {Type: "local", Command: append([]string{c.Command}, args...), Enabled: true}},
		}, nil
	case ClientClaudeCode, ClientClaudeDesktop:
		type server struct {
			Type    string   `json:"type,omitempty"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		s := server{Command: c.Command, Args: args}
		if client == ClientClaudeCode {
			s.Type = "stdio"
		}
		return map[string]any{"mcpServers": map[string]server{ServerName: s}}, nil
	}
	return nil, unknownClient(client)
}

// httpConfig is client's config that holds the URL and the token.
func httpConfig(client string, c ClientConfig) (any, error) {
	headers := map[string]string{"Authorization": "Bearer " + c.Token}
	if ws := filepath.ToSlash(c.WorkspacePath); ws != "" {
		headers[WorkspaceHeader] = ws
	}
	switch client {
	case ClientOpencode:
		type remote struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
			Enabled bool              `json:"enabled"`
		}
		return struct {
			Schema string            `json:"$schema"`
			MCP    map[string]remote `json:"mcp"`
		}{
			Schema: "https://opencode.ai/config.json",
			MCP:    map[string]remote{ServerName: {Type: "remote", URL: c.URL, Headers: headers, Enabled: true}},
		}, nil
	case ClientClaudeCode:
		type server struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		}
		return map[string]any{"mcpServers": map[string]server{ServerName: {Type: "http", URL: c.URL, Headers: headers}}}, nil
	case ClientClaudeDesktop:
		return nil, errors.New("the config file of Claude Desktop starts only commands, so it has no HTTP form; use its default config, which runs codehydra mcp-stdio")
	}
	return nil, unknownClient(client)
}

func unknownClient(client string) error {
	return fmt.Errorf("unknown MCP client %q; choose one of %v", client, Clients())
}
