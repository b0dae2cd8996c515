package settings

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Scopes of an MCP server (MCPServer.Scope).
const (
	// ScopeShared runs one instance of the server for every caller.
	ScopeShared = "shared"
	// ScopeWorkspace runs one instance per workspace, started in it and
	// given it as its MCP root.
	ScopeWorkspace = "workspace"
)

// maxServerName keeps "<server>__<tool>" within the 128 characters that
// MCP clients accept for a tool's name, with room for the tool's own.
const maxServerName = 32

var (
	serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	// envRefRE is a reference to the user's environment in a value:
	// {env:NAME}.
	envRefRE  = regexp.MustCompile(`\{env:([^}]*)\}`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// MCPServer is one of the user's own MCP servers (the settings'
// mcpServers, keyed by its name), which CodeHydra starts and offers to
// every agent as tools named "<name>__<tool>". It is either a local
// program spoken to over stdio (Command) or a remote server over
// Streamable HTTP (URL), in the shape other MCP clients use. Values of
// Args, Env, URL and Headers may name the user's environment as
// {env:NAME}: ExpandEnv fills them in when the server starts, so secrets
// need not sit in the file.
type MCPServer struct {
	// Command is the program: an absolute path, or a bare name looked up
	// on PATH (never relative: it would be found from a folder whose
	// content comes from a repository).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is a Streamable HTTP endpoint: https, or http on a loopback
	// address only (a token sent in clear over a network is a token
	// given away).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Scope is ScopeShared ("" too) or ScopeWorkspace.
	Scope string `json:"scope,omitempty"`
	// Confine refuses, before they reach the server, calls whose
	// arguments hold an absolute path outside the caller's workspace.
	Confine bool `json:"confine,omitempty"`
	// StartAtLaunch starts the server when CodeHydra starts rather than on
	// first use (a workspace-scoped one: its first instance).
	StartAtLaunch bool `json:"startAtLaunch,omitempty"`
}

// WorkspaceRef in an arg of a workspace-scoped server is replaced by the
// workspace's folder when its instance starts (it starts outside it).
const WorkspaceRef = "{workspace}"

// ConfineProblem says why m's "confine" cannot hold, or nil. Confinement
// judges the paths in a call's arguments against the caller's workspace;
// a shared server serves every workspace from one process, which resolves
// a relative path from its own working folder and may follow a symlink
// swapped in after the check, so nothing makes it hold there. A
// workspace-scoped server's instance starts in an empty folder and runs
// in its workspace's kernel sandbox. It is not a load error, so that a
// file written before it was refused keeps working: the gateway does not
// start such a server and says why, and the settings window refuses it.
func (m MCPServer) ConfineProblem() error {
	if m.Confine && m.Remote() {
		return fmt.Errorf("\"confine\" needs a local server (a command) of \"scope\": \"workspace\": a remote server resolves paths on its own machine and runs in no sandbox of CodeHydra's, where the check cannot hold; turn confine off")
	}
	if m.Confine && !m.PerWorkspace() {
		return fmt.Errorf("\"confine\" needs \"scope\": \"workspace\": a shared server serves every workspace from one process, where a relative path or a symlink swapped in after the check reaches another workspace's files; set its scope to workspace (one instance per workspace, in its kernel sandbox), or turn confine off")
	}
	return nil
}

// PerWorkspace reports a server that runs one instance per workspace.
func (m MCPServer) PerWorkspace() bool { return m.Scope == ScopeWorkspace }

// Remote reports a server reached over Streamable HTTP.
func (m MCPServer) Remote() bool { return m.URL != "" }

// Equal reports whether m and o configure the same server, so that a
// running one can be kept across a change of the settings.
func (m MCPServer) Equal(o MCPServer) bool {
	return m.Command == o.Command && slices.Equal(m.Args, o.Args) && maps.Equal(m.Env, o.Env) &&
		m.URL == o.URL && maps.Equal(m.Headers, o.Headers) && m.Scope == o.Scope &&
		m.Confine == o.Confine && m.StartAtLaunch == o.StartAtLaunch
}

// Clone returns a copy of m that shares no slice or map with it.
func (m MCPServer) Clone() MCPServer {
	m.Args = slices.Clone(m.Args)
	m.Env = maps.Clone(m.Env)
	m.Headers = maps.Clone(m.Headers)
	return m
}

// ExpandEnv replaces each {env:NAME} in v with the value lookup gives for
// NAME. A name that lookup does not know is an error naming it (never its
// value): a server started with an empty token fails later and less
// clearly.
func ExpandEnv(v string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := envRefRE.ReplaceAllStringFunc(v, func(ref string) string {
		name := envRefRE.FindStringSubmatch(ref)[1]
		val, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set: set it before starting CodeHydra, or write the value in the settings", strings.Join(missing, ", "))
	}
	return out, nil
}

// CheckMCPServerName reports what is wrong with a server's name: it
// becomes the first half of its tools' names, split from them by "__".
func CheckMCPServerName(name string) error {
	switch {
	case !serverNameRE.MatchString(name):
		return fmt.Errorf("mcpServers: name %q is not valid: use letters, digits, - and _, starting with a letter or digit", name)
	case strings.Contains(name, "__"):
		return fmt.Errorf("mcpServers: name %q holds \"__\", which separates a server's name from its tools' names: use a single _", name)
	case strings.HasSuffix(name, "_"):
		// "a_" + "__" + "x" would read back as server "a", tool "_x".
		return fmt.Errorf("mcpServers: name %q ends in _, which would run into the \"__\" before its tools' names", name)
	case len(name) > maxServerName:
		return fmt.Errorf("mcpServers: name %q is longer than %d characters", name, maxServerName)
	}
	return nil
}

// Check reports what is wrong with m, the server called name, as
// sentences naming the key.
func (m MCPServer) Check(name string) []error {
	key := fmt.Sprintf("mcpServers[%q]", name)
	var errs []error
	if err := CheckMCPServerName(name); err != nil {
		errs = append(errs, err)
	}
	switch {
	case m.Command == "" && m.URL == "":
		errs = append(errs, fmt.Errorf("%s has neither command nor url: give one", key))
	case m.Command != "" && m.URL != "":
		errs = append(errs, fmt.Errorf("%s has both command and url: give one", key))
	case m.Command != "":
		if err := checkServerCommand(m.Command); err != nil {
			errs = append(errs, fmt.Errorf("%s.command: %w", key, err))
		}
		if len(m.Headers) > 0 {
			errs = append(errs, fmt.Errorf("%s: headers apply to a url server only: use env for a command", key))
		}
	default:
		if err := checkServerURL(m.URL); err != nil {
			errs = append(errs, fmt.Errorf("%s.url: %w", key, err))
		}
		if len(m.Args) > 0 || len(m.Env) > 0 {
			errs = append(errs, fmt.Errorf("%s: args and env apply to a command server only", key))
		}
	}
	if m.Scope != "" && m.Scope != ScopeShared && m.Scope != ScopeWorkspace {
		errs = append(errs, fmt.Errorf("%s.scope is %q: use %q or %q", key, m.Scope, ScopeShared, ScopeWorkspace))
	}
	if !m.PerWorkspace() && slices.ContainsFunc(m.Args, func(a string) bool { return strings.Contains(a, WorkspaceRef) }) {
		errs = append(errs, fmt.Errorf("%s.args: %s names the workspace, which only a server of scope %q has", key, WorkspaceRef, ScopeWorkspace))
	}
	values := slices.Clone(m.Args)
	values = append(values, m.URL)
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		if !envNameRE.MatchString(k) {
			errs = append(errs, fmt.Errorf("%s.env: %q is not a variable name", key, k))
		}
		values = append(values, m.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			errs = append(errs, fmt.Errorf("%s.headers: %q is not a header name", key, k))
		}
		values = append(values, m.Headers[k])
	}
	for _, v := range values {
		if err := checkEnvRefs(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return errs
}

// checkServerCommand pins the rule of CheckCommand for a program given
// alone (its arguments are in args).
func checkServerCommand(cmd string) error {
	switch {
	case strings.TrimSpace(cmd) != cmd || !filepath.IsAbs(cmd) && strings.ContainsAny(cmd, " \t"):
		return fmt.Errorf("%q has spaces around it: give the program only, and its arguments in args", cmd)
	case strings.Contains(cmd, "{env:"):
		return fmt.Errorf("%q names the environment: write the program's path", cmd)
	case relativeBin(cmd):
		return fmt.Errorf("%q is a relative path: use a command name looked up on PATH, or the program's absolute path", cmd)
	}
	return nil
}

// checkServerURL allows https anywhere and plain http on loopback only.
func checkServerURL(raw string) error {
	const ref = "codehydraenvref"
	u, err := url.Parse(envRefRE.ReplaceAllString(raw, ref))
	if err != nil {
		return fmt.Errorf("%q cannot be read: %w", raw, err)
	}
	if strings.Contains(strings.ToLower(u.Scheme+u.Host), ref) {
		return fmt.Errorf("%q names the environment in its scheme or host: write them out", raw)
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q has no host: give a full address such as https://example.com/mcp", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return fmt.Errorf("%q is not http or https", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is plain http to another machine: use https (plain http only for 127.0.0.1, ::1 or localhost)", raw)
}

// checkEnvRefs checks every {env:NAME} in v names a variable.
func checkEnvRefs(v string) error {
	for _, m := range envRefRE.FindAllStringSubmatch(v, -1) {
		if !envNameRE.MatchString(m[1]) {
			return fmt.Errorf("{env:%s} does not name an environment variable", m[1])
		}
	}
	return nil
}

// cloneMCPServers copies m so that the copy shares no slice or map.
func cloneMCPServers(m map[string]MCPServer) map[string]MCPServer {
	if m == nil {
		return nil
	}
	c := make(map[string]MCPServer, len(m))
	for k, v := range m {
		c[k] = v.Clone()
	}
	return c
}

// validateMCPServers checks every server.
func (s Settings) validateMCPServers() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.MCPServers)) {
		errs = append(errs, s.MCPServers[name].Check(name)...)
	}
	return errs
}
