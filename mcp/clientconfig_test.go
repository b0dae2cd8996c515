package mcp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestRenderClientConfigShapes(t *testing.T) {
	c := ClientConfig{URL: "http://127.0.0.1:4321/mcp", Token: "tok", WorkspacePath: "/home/u/ws & co"}
	checkRendered(t, c, map[string]string{
		ClientOpencode: `{"$schema":"https://opencode.ai/config.json","mcp":{"codehydra":{"type":"remote","url":"http://127.0.0.1:4321/mcp",
			"headers":{"Authorization":"Bearer tok","X-Workspace-Path":"/home/u/ws & co"},"enabled":true}}}`,
		ClientClaudeCode: `{"mcpServers":{"codehydra":{"type":"http","url":"http://127.0.0.1:4321/mcp",
			"headers":{"Authorization":"Bearer tok","X-Workspace-Path":"/home/u/ws & co"}}}}`,
	})
	if _, err := RenderClientConfig("vscode", c); err == nil {
		t.Fatal("unknown client accepted")
	}
	// Claude Desktop starts only commands: no config of it needs Node
	// and a bridge from the network any more.
	if got, err := RenderClientConfig(ClientClaudeDesktop, c); err == nil || !strings.Contains(err.Error(), "mcp-stdio") {
		t.Fatalf("claude-desktop over HTTP: %s, %v; want an error that points to mcp-stdio", got, err)
	}
}

func TestRenderClientConfigWithACommandHoldsNeitherPortNorToken(t *testing.T) {
	c := ClientConfig{Command: "/opt/code hydra/codehydra", WorkspacePath: "/home/u/ws & co"}
	checkRendered(t, c, map[string]string{
		ClientOpencode: `{"$schema":"https://opencode.ai/config.json","mcp":{"codehydra":{"type":"local",
			"command":["/opt/code hydra/codehydra","mcp-stdio","--workspace","/home/u/ws & co"],"enabled":true}}}`,
		ClientClaudeCode:    `{"mcpServers":{"codehydra":{"type":"stdio","command":"/opt/code hydra/codehydra","args":["mcp-stdio","--workspace","/home/u/ws & co"]}}}`,
		ClientClaudeDesktop: `{"mcpServers":{"codehydra":{"command":"/opt/code hydra/codehydra","args":["mcp-stdio","--workspace","/home/u/ws & co"]}}}`,
	})
	got, err := RenderClientConfig(ClientClaudeCode, ClientConfig{Command: "/bin/codehydra"})
	if err != nil || strings.Contains(string(got), "--workspace") {
		t.Fatalf("without a workspace: %s, %v", got, err)
	}
}

func TestRenderClientConfigWithoutWorkspaceOmitsTheHeader(t *testing.T) {
	for _, client := range []string{ClientOpencode, ClientClaudeCode} {
		got, err := RenderClientConfig(client, ClientConfig{URL: "http://127.0.0.1:1/mcp", Token: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(got), WorkspaceHeader) || strings.Contains(string(got), "WORKSPACE") {
			t.Errorf("%s: %s", client, got)
		}
	}
}

// TestPrintedClientConfigsWork reads each printed config the way its client
// does and calls a tool with what it says.
func TestPrintedClientConfigsWork(t *testing.T) {
	h := newHarness(t)
	ws := h.create("cfg")
	for _, client := range []string{ClientOpencode, ClientClaudeCode} {
		t.Run(client, func(t *testing.T) {
			data, err := RenderClientConfig(client, ClientConfig{URL: h.srv.URL(), Token: h.token.Value(), WorkspacePath: ws.Path})
			if err != nil {
				t.Fatal(err)
			}
			url, hdr := endpointOf(t, client, data)
			if url != h.srv.URL() {
				t.Fatalf("url %s", url)
			}
			cs := h.sessionWith(&headerTransport{base: newTransport(t), header: hdr})
			var st map[string]any
			okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
			if st["path"] != ws.Path {
				t.Fatalf("status of %v", st["path"])
			}
		})
	}
}

// endpointOf extracts URL and headers from a rendered HTTP config.
func endpointOf(t *testing.T, client string, data []byte) (string, http.Header) {
	t.Helper()
	hdr := http.Header{}
	switch client {
	case ClientOpencode:
		var c struct {
			MCP map[string]struct {
				Type    string            `json:"type"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
				Enabled bool              `json:"enabled"`
			} `json:"mcp"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		s := c.MCP[ServerName]
		if s.Type != "remote" || !s.Enabled {
			t.Fatalf("server %+v", s)
		}
		for k, v := range s.Headers {
			hdr.Set(k, v)
		}
		return s.URL, hdr
	case ClientClaudeCode:
		var c struct {
			MCPServers map[string]struct {
				Type    string            `json:"type"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		s := c.MCPServers[ServerName]
		if s.Type != "http" {
			t.Fatalf("server %+v", s)
		}
		for k, v := range s.Headers {
			hdr.Set(k, v)
		}
		return s.URL, hdr
	default:
		t.Fatalf("no HTTP config for %s", client)
		return "", nil
	}
}

// checkRendered checks that c renders, for each client, as want says (as
// JSON, and with no HTML escapes).
func checkRendered(t *testing.T, c ClientConfig, want map[string]string) {
	t.Helper()
	for client, w := range want {
		t.Run(client, func(t *testing.T) {
			got, err := RenderClientConfig(client, c)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, []byte(w)) {
				t.Fatalf("got %s\nwant %s", got, w)
			}
			if strings.Contains(string(got), `\u0026`) {
				t.Fatal("HTML-escaped output")
			}
		})
	}
}
