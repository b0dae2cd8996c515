package mcpimport

import (
	"encoding/json"
	"fmt"
	"slices"
)

// claudeServer is a server as Claude Desktop and Claude Code write it.
type claudeServer struct {
	stdioOrHTTP
	Env map[string]string `json:"env"`
}

// stdioOrHTTP is what a server of Claude's and of VS Code's shape holds
// besides its env, which they write differently.
type stdioOrHTTP struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Cwd     string            `json:"cwd"`
}

// convert fills fd's command, arguments, URL and headers from s through
// refs, unless s's type is one CodeHydra does not speak: then it sets
// fd.Problem and reports false.
func (s stdioOrHTTP) convert(fd *Found, refs func(string) string) bool {
	switch s.Type {
	case "", "stdio", "http":
	case "sse":
		fd.Problem = sseProblem
		return false
	default:
		fd.Problem = fmt.Sprintf("its type %q is not one CodeHydra knows (stdio or http)", s.Type)
		return false
	}
	fd.Server.Command = refs(s.Command)
	fd.Server.Args = sliceValues(s.Args, refs)
	fd.Server.URL = refs(s.URL)
	fd.Server.Headers = mapValues(s.Headers, refs)
	return true
}

// noteCwd says on fd that s's working folder is not kept.
func (s stdioOrHTTP) noteCwd(fd *Found) {
	if s.Cwd != "" {
		fd.note("its working folder (cwd) is not kept: CodeHydra starts it in its own")
	}
}

// readClaudeDesktop reads claude_desktop_config.json's mcpServers. Claude
// Desktop fills in no variables: every value is taken as written.
func readClaudeDesktop(f *fileReader, raw map[string]json.RawMessage) {
	f.servers(raw["mcpServers"], "", func(_ string, r json.RawMessage) Found { return convertClaude(r, false) })
}

// readClaudeJSON reads ~/.claude.json: the user's servers (top-level
// mcpServers) and each project's (projects.<path>.mcpServers).
func readClaudeJSON(f *fileReader, raw map[string]json.RawMessage) {
	f.servers(raw["mcpServers"], "", claudeCodeServer)
	var projects map[string]struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	if len(raw["projects"]) > 0 {
		if err := json.Unmarshal(raw["projects"], &projects); err != nil {
			f.errs = append(f.errs, FileError{f.path, fmt.Errorf("its projects cannot be read: %w", err)})
			return
		}
	}
	paths := make([]string, 0, len(projects))
	for p := range projects {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		f.servers(projects[p].MCPServers, "project "+p, claudeCodeServer)
	}
}

// readMCPJSON reads a project's .mcp.json (Claude Code's project servers).
func readMCPJSON(f *fileReader, raw map[string]json.RawMessage) {
	f.servers(raw["mcpServers"], "", claudeCodeServer)
}

// claudeCodeServer converts a server of Claude Code, which fills in
// ${NAME} and ${NAME:-default} from the environment.
func claudeCodeServer(_ string, r json.RawMessage) Found { return convertClaude(r, true) }

// convertClaude converts a server of Claude's shape; expand turns Claude
// Code's references into CodeHydra's.
func convertClaude(r json.RawMessage, expand bool) Found {
	var fd Found
	refs := func(v string) string { return v }
	if expand {
		refs = fd.claudeRefs
	}
	var s claudeServer
	if fd.Problem = decode(r, &s); fd.Problem != "" {
		return fd
	}
	if !s.convert(&fd, refs) {
		return fd
	}
	fd.Server.Env = mapValues(s.Env, refs)
	s.noteCwd(&fd)
	return fd
}

// sseProblem refuses the older HTTP+SSE transport.
const sseProblem = "it uses the SSE transport, which CodeHydra does not speak: use the server's Streamable HTTP address (type http) instead"
