package mcpimport

import (
	"encoding/json"
	"fmt"
)

// opencodeServer is a server of opencode's "mcp": {type: "local",
// command: [program, args…], environment, enabled} or {type: "remote",
// url, headers, enabled}.
type opencodeServer struct {
	Type        string            `json:"type"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	URL         string            `json:"url"`
	Headers     map[string]string `json:"headers"`
	Enabled     *bool             `json:"enabled"`
	OAuth       json.RawMessage   `json:"oauth"`
}

// readOpencode reads the "mcp" of an opencode configuration (JSON with
// comments).
func readOpencode(f *fileReader, raw map[string]json.RawMessage) {
	mcp := raw["mcp"]
	// Newer opencode documentation nests them as mcp.servers; a server
	// called "servers" has a type, the nesting does not.
	var top map[string]json.RawMessage
	if json.Unmarshal(mcp, &top) == nil && len(top["servers"]) > 0 {
		var probe struct {
			Type *string `json:"type"`
		}
		if json.Unmarshal(top["servers"], &probe) == nil && probe.Type == nil {
			mcp = top["servers"]
		}
	}
	f.servers(mcp, "", func(_ string, r json.RawMessage) Found { return convertOpencode(r) })
}

func convertOpencode(r json.RawMessage) Found {
	var fd Found
	var s opencodeServer
	if fd.Problem = decode(r, &s); fd.Problem != "" {
		return fd
	}
	switch s.Type {
	case "local":
		if len(s.Command) == 0 {
			fd.Problem = "its command is empty"
			return fd
		}
		cmd := sliceValues(s.Command, fd.opencodeRefs)
		fd.Server.Command, fd.Server.Args = cmd[0], cmd[1:]
		if len(fd.Server.Args) == 0 {
			fd.Server.Args = nil
		}
		fd.Server.Env = mapValues(s.Environment, fd.opencodeRefs)
	case "remote":
		fd.Server.URL = fd.opencodeRefs(s.URL)
		fd.Server.Headers = mapValues(s.Headers, fd.opencodeRefs)
		if len(s.OAuth) > 0 && string(s.OAuth) != "false" {
			fd.note("opencode signs in to it with OAuth, which CodeHydra does not: give a token in its headers")
		}
	default:
		fd.Problem = fmt.Sprintf("its type %q is neither local nor remote", s.Type)
		return fd
	}
	if s.Enabled != nil && !*s.Enabled {
		fd.Server.Enabled = new(false)
		fd.note("it is switched off in opencode, and comes in switched off")
	}
	return fd
}
