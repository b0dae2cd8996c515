package settings

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
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
	// wsRefRE is a workspace variable, known or not: {workspace},
	// {workspace.NAME} or {project.NAME}.
	wsRefRE = regexp.MustCompile(`\{(workspace|workspace\.[^}]*|project\.[^}]*)\}`)
	// refRE is either kind, so that a value is expanded in one pass and
	// what one reference gives is never read as another.
	refRE = regexp.MustCompile(`\{(env:[^}]*|workspace|workspace\.[^}]*|project\.[^}]*)\}`)
)

// MCPServer is one of the user's own MCP servers (the settings'
// mcpServers, keyed by its name), which CodeHydra starts and offers to
// every agent as tools named "<name>__<tool>". It is either a local
// program spoken to over stdio (Command) or a remote server over
// Streamable HTTP (URL), in the shape other MCP clients use. Values of
// Args, Env, URL and Headers may name the user's environment as
// {env:NAME}, and a workspace-scoped server's the workspace's variables
// (WorkspaceVars): Expand fills them in when the server starts, so
// secrets need not sit in the file.
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
	// Enabled false keeps the server configured but neither started nor
	// offered; nil (the default) and true run it. See On.
	Enabled *bool `json:"enabled,omitempty"`
	// Tools picks which of the server's tools are offered.
	Tools ToolRules `json:"tools,omitzero"`
	// Paths narrows, for a confined server, the paths its arguments may
	// name inside the caller's workspace.
	Paths PathRules `json:"paths,omitzero"`
	// RateLimit bounds the calls to the server from all callers together,
	// on top of each caller's own limit.
	RateLimit ServerRateLimit `json:"rateLimit,omitzero"`
}

// ToolRules are a server's tool allow and deny lists (settings "tools"):
// globs (path.Match) over the server's own tool names, not the offered
// "<server>__<tool>". A tool is hidden when a deny glob matches it, or
// when allow is not empty and no allow glob does; deny wins.
type ToolRules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Hides says why the rules hide the server's tool named tool, as the end
// of a sentence ("tools.deny rule \"write_*\""), or "" when they offer
// it.
func (r ToolRules) Hides(tool string) string {
	for _, g := range r.Deny {
		if ok, _ := path.Match(g, tool); ok {
			return fmt.Sprintf("tools.deny rule %q", g)
		}
	}
	if len(r.Allow) == 0 {
		return ""
	}
	for _, g := range r.Allow {
		if ok, _ := path.Match(g, tool); ok {
			return ""
		}
	}
	return fmt.Sprintf("tools.allow rules (%s), none of which it matches", quoteAll(r.Allow))
}

// PathRules are a confined server's path allow and deny lists (settings
// "paths"), relative to the caller's workspace and written with "/". A
// deny entry is read as a workspaceDeny pattern (a name without "/"
// matches at any depth: ".env", "secrets/"); an allow entry is a path
// from the workspace's top, globs allowed per part ("src/", "docs/*.md"),
// and a path is allowed when it is one or lies under one. An empty allow
// allows the whole workspace.
type PathRules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// ServerRateLimit bounds the calls to one server from all its callers.
type ServerRateLimit struct {
	// PerMinute is how many calls a minute it takes, in a burst of as
	// many; 0 sets no limit.
	PerMinute int `json:"perMinute,omitempty"`
}

// maxPerMinute bounds rateLimit.perMinute: more is no limit at all.
const maxPerMinute = 1_000_000

// On reports whether the server is switched on (settings "enabled").
func (m MCPServer) On() bool { return m.Enabled == nil || *m.Enabled }

// WorkspaceRef in a value of a workspace-scoped server is replaced by the
// workspace's folder when its instance starts (it starts outside it); it
// is {workspace.path} by its older name.
const WorkspaceRef = "{workspace}"

// WorkspaceVars are the values of a workspace-scoped server's workspace
// variables, for the workspace an instance runs for: {workspace.path}
// (and {workspace}), {workspace.name}, {workspace.branch} and
// {project.path}.
type WorkspaceVars struct {
	// Path is the workspace's folder.
	Path string
	// Name is the workspace's name as CodeHydra shows it: its branch, or
	// its folder's name when HEAD is detached.
	Name string
	// Branch is its checked-out branch, "" when HEAD is detached.
	Branch string
	// ProjectPath is the folder of the project it belongs to.
	ProjectPath string
}

// workspaceVarNames are the workspace variables, as written between the
// braces.
var workspaceVarNames = []string{"workspace.path", "workspace.name", "workspace.branch", "project.path"}

func (v WorkspaceVars) lookup(name string) string {
	switch name {
	case "workspace", "workspace.path":
		return v.Path
	case "workspace.name":
		return v.Name
	case "workspace.branch":
		return v.Branch
	case "project.path":
		return v.ProjectPath
	}
	return ""
}

// quoteAll is the strings quoted, separated by commas.
func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

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
		m.Confine == o.Confine && m.StartAtLaunch == o.StartAtLaunch && m.On() == o.On() &&
		slices.Equal(m.Tools.Allow, o.Tools.Allow) && slices.Equal(m.Tools.Deny, o.Tools.Deny) &&
		slices.Equal(m.Paths.Allow, o.Paths.Allow) && slices.Equal(m.Paths.Deny, o.Paths.Deny) &&
		m.RateLimit == o.RateLimit
}

// Clone returns a copy of m that shares no slice, map or pointer with it.
func (m MCPServer) Clone() MCPServer {
	m.Args = slices.Clone(m.Args)
	m.Env = maps.Clone(m.Env)
	m.Headers = maps.Clone(m.Headers)
	if m.Enabled != nil {
		on := *m.Enabled
		m.Enabled = &on
	}
	m.Tools = ToolRules{Allow: slices.Clone(m.Tools.Allow), Deny: slices.Clone(m.Tools.Deny)}
	m.Paths = PathRules{Allow: slices.Clone(m.Paths.Allow), Deny: slices.Clone(m.Paths.Deny)}
	return m
}

// ExpandEnv replaces each {env:NAME} in v with the value lookup gives for
// NAME. A name that lookup does not know is an error naming it (never its
// value): a server started with an empty token fails later and less
// clearly.
func ExpandEnv(v string, lookup func(string) (string, bool)) (string, error) {
	return Expand(v, lookup, nil)
}

// Expand is ExpandEnv that also fills in the workspace variables from ws
// (a workspace-scoped server's instance), in the same pass: what one
// reference gives is never read as another. With ws nil they are left as
// written.
func Expand(v string, lookup func(string) (string, bool), ws *WorkspaceVars) (string, error) {
	var missing []string
	out := refRE.ReplaceAllStringFunc(v, func(ref string) string {
		inner := ref[1 : len(ref)-1]
		name, isEnv := strings.CutPrefix(inner, "env:")
		if !isEnv {
			if ws == nil {
				return ref
			}
			return ws.lookup(inner)
		}
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
	type value struct{ at, v string }
	var values []value
	for _, a := range m.Args {
		values = append(values, value{".args", a})
	}
	values = append(values, value{".url", m.URL})
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		if !envNameRE.MatchString(k) {
			errs = append(errs, fmt.Errorf("%s.env: %q is not a variable name", key, k))
		}
		values = append(values, value{".env", m.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			errs = append(errs, fmt.Errorf("%s.headers: %q is not a header name", key, k))
		}
		values = append(values, value{".headers", m.Headers[k]})
	}
	for _, v := range values {
		if err := checkEnvRefs(v.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
		if err := m.checkWorkspaceRefs(v.v); err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", key, v.at, err))
		}
	}
	return append(errs, m.checkPolicies(key, name)...)
}

// checkWorkspaceRefs checks that every workspace variable in v is one,
// and that m is a server that has a workspace.
func (m MCPServer) checkWorkspaceRefs(v string) error {
	for _, ref := range wsRefRE.FindAllStringSubmatch(v, -1) {
		if ref[1] != "workspace" && !slices.Contains(workspaceVarNames, ref[1]) {
			return fmt.Errorf("%s is not a workspace variable: use {%s}", ref[0], strings.Join(workspaceVarNames, "}, {"))
		}
		if !m.PerWorkspace() {
			return fmt.Errorf("%s names the workspace, which only a server of scope %q has: set its scope to workspace", ref[0], ScopeWorkspace)
		}
	}
	return nil
}

// checkPolicies checks the server's tools, paths and rateLimit.
func (m MCPServer) checkPolicies(key, name string) []error {
	var errs []error
	for _, list := range []struct {
		at    string
		globs []string
	}{{"tools.allow", m.Tools.Allow}, {"tools.deny", m.Tools.Deny}} {
		for _, g := range list.globs {
			if err := checkToolGlob(name, g); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", key, list.at, err))
			}
		}
	}
	for _, list := range []struct {
		at       string
		patterns []string
	}{{"paths.allow", m.Paths.Allow}, {"paths.deny", m.Paths.Deny}} {
		for _, p := range list.patterns {
			if err := checkRelPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", key, list.at, err))
			}
		}
	}
	if len(m.Paths.Allow)+len(m.Paths.Deny) > 0 && !m.Confine {
		errs = append(errs, fmt.Errorf("%s.paths applies to the path arguments of a confined server only, and this one is not: set \"confine\": true (with \"scope\": \"workspace\"), or remove paths", key))
	}
	if n := m.RateLimit.PerMinute; n < 0 || n > maxPerMinute {
		errs = append(errs, fmt.Errorf("%s.rateLimit.perMinute is %d: use 1 to %d, or 0 for no limit", key, n, maxPerMinute))
	}
	return errs
}

// checkToolGlob checks a glob of tools.allow or tools.deny of the server
// called server.
func checkToolGlob(server, g string) error {
	switch {
	case strings.TrimSpace(g) == "":
		return fmt.Errorf("a glob is empty: remove it")
	case strings.HasPrefix(g, server+"__"):
		return fmt.Errorf("%q starts with the server's name: the globs match the server's own tool names, e.g. %q", g, strings.TrimPrefix(g, server+"__"))
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob (path.Match: *, ?, [a-z], \\ to escape): %w", g, err)
	}
	return nil
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
	u, err := url.Parse(refRE.ReplaceAllString(raw, ref))
	if err != nil {
		return fmt.Errorf("%q cannot be read: %w", raw, err)
	}
	if strings.Contains(strings.ToLower(u.Scheme+u.Host), ref) {
		return fmt.Errorf("%q names the environment or the workspace in its scheme or host: write them out", raw)
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
