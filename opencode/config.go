// Package opencode runs one `opencode serve` per workspace and tells the
// rest of CodeHydra what each agent is doing. It writes the OpenCode config
// file that points every agent at CodeHydra's MCP server, supervises the
// servers (ports, readiness, restart with backoff, stop, reaping orphans of
// a crashed run), and follows each server's event stream to report its
// sessions as busy, idle or waiting for input. It implements
// workspace.Agents and the MCP server's port lookup.
package opencode

import (
	"encoding/json"
	"fmt"
	"os"

	"codehydra/internal/atomicfile"
)

// configJSON is docs/DESIGN.md's OpenCode config file, byte for byte. opencode
// substitutes the {env:…} references from each agent's environment, so one
// file serves every workspace.
const configJSON = `{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "codehydra": {
      "type": "remote",
      "url": "http://127.0.0.1:{env:CODEHYDRA_MCP_PORT}/mcp",
      "headers": {
        "X-Workspace-Path": "{env:CODEHYDRA_WORKSPACE_PATH}",
        "Authorization": "Bearer {env:CODEHYDRA_MCP_TOKEN}"
      },
      "enabled": true
    }
  }
}
`

// ConfigJSON returns the content WriteConfig writes.
func ConfigJSON() []byte { return []byte(configJSON) }

// WriteConfig writes the OpenCode config file to path atomically (temp
// file, fsync, rename), creating its folder. The app calls it on every
// launch, after the MCP server listens and before any agent starts: each
// agent's start reads it (see readConfig). The file holds no secret (the
// token comes through the environment) but is private to the user all
// the same.
func WriteConfig(path string) error {
	return writeConfigWith(atomicfile.Writer{}, path)
}

// writeConfigWith is WriteConfig through w (tests simulate a full disk
// with it).
func writeConfigWith(w atomicfile.Writer, path string) error {
	if err := w.Write(path, []byte(configJSON), 0o600); err != nil {
		return fmt.Errorf("write opencode config: %w", err)
	}
	return nil
}

// agentConfig is the OpenCode config file as an agent's start reads it.
type agentConfig struct {
	path string
	// entry is its mcp.codehydra, as written.
	entry json.RawMessage
}

// readConfig reads the OpenCode config file at path. Every agent start
// reads it: the file is the one source of the codehydra MCP entry, which
// the agent gets twice, by path (OPENCODE_CONFIG, docs/DESIGN.md's mechanism)
// and inline (OPENCODE_CONFIG_CONTENT, see configContent). An agent
// started before the app wrote the file, or after it was lost, does not
// start: it would not reach the MCP server.
func readConfig(path string) (agentConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return agentConfig{}, fmt.Errorf("read the OpenCode config: %w", err)
	}
	var cfg struct {
		MCP map[string]json.RawMessage `json:"mcp"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.MCP["codehydra"] == nil {
		return agentConfig{}, fmt.Errorf("the OpenCode config %s has no codehydra MCP server", path)
	}
	return agentConfig{path: path, entry: cfg.MCP["codehydra"]}, nil
}

// configContent is the value of OPENCODE_CONFIG_CONTENT for an agent given
// cfg whose inherited environment set it to inherited ("" when not): the
// codehydra entry of cfg's file, set over the user's own content (content
// that is not a JSON object is dropped). opencode ranks that variable
// above a project's own opencode.json and .opencode/, while the
// OPENCODE_CONFIG file ranks below them: without it a repository could
// replace the codehydra entry with a URL of its own, which would then be
// sent the workspace's token.
func configContent(cfg agentConfig, inherited string) string {
	var theirs map[string]any
	if json.Unmarshal([]byte(inherited), &theirs) != nil || theirs == nil {
		theirs = map[string]any{}
	}
	servers, _ := theirs["mcp"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["codehydra"] = cfg.entry
	theirs["mcp"] = servers
	b, err := json.Marshal(theirs)
	if err != nil {
		// Not reached: everything in theirs was parsed from JSON.
		return `{"mcp":{"codehydra":` + string(cfg.entry) + `}}`
	}
	return string(b)
}
