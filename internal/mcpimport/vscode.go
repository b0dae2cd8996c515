package mcpimport

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// vscodeServer is a server of VS Code's mcp.json "servers".
type vscodeServer struct {
	stdioOrHTTP
	Env     map[string]any `json:"env"`
	EnvFile string         `json:"envFile"`
}

// vscodeInput is one of mcp.json's "inputs", which VS Code asks the user
// for when it starts a server that names it.
type vscodeInput struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// readVSCode reads an mcp.json (JSON with comments): its servers, and its
// inputs to say what each ${input:id} was.
func readVSCode(f *fileReader, raw map[string]json.RawMessage) {
	var inputs []vscodeInput
	_ = json.Unmarshal(raw["inputs"], &inputs) // a broken list only costs the descriptions
	byID := map[string]string{}
	for _, in := range inputs {
		byID[in.ID] = in.Description
	}
	f.servers(raw["servers"], "", func(_ string, r json.RawMessage) Found { return convertVSCode(r, f.home, byID) })
}

func convertVSCode(r json.RawMessage, home string, inputs map[string]string) Found {
	var fd Found
	var s vscodeServer
	if fd.Problem = decode(r, &s); fd.Problem != "" {
		return fd
	}
	refs := func(v string) string { return fd.vscodeRefs(v, home, inputs) }
	if !s.convert(&fd, refs) {
		return fd
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		var val string
		switch v := s.Env[k].(type) {
		case string:
			val = v
		case float64:
			val = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			val = strconv.FormatBool(v)
		case nil:
			// null removes the variable from VS Code's environment; CodeHydra
			// passes no such variable in the first place.
			continue
		default:
			fd.Problem = fmt.Sprintf("its env %s is not a string", k)
			return fd
		}
		if fd.Server.Env == nil {
			fd.Server.Env = map[string]string{}
		}
		fd.Server.Env[k] = refs(val)
	}
	if s.EnvFile != "" {
		fd.note("its envFile (%s) is not read: set its variables in CodeHydra's environment, or in env", s.EnvFile)
	}
	s.noteCwd(&fd)
	return fd
}
