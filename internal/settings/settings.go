// Package settings reads, checks and writes CodeHydra's settings.json (see
// docs/DESIGN.md "Files"). Keys the app does not know are kept on save, so a newer
// version's settings survive a run of an older one. A file that cannot be
// read as valid settings is never overwritten: it is moved aside and the app
// goes on with defaults.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
)

// RateLimit bounds the MCP tool calls of one client.
type RateLimit struct {
	PerSecond float64 `json:"perSecond"`
	Burst     int     `json:"burst"`
}

// CreateLimit bounds the workspaces one MCP caller (the user, or each
// workspace's token) creates: at most Count within any Minutes.
type CreateLimit struct {
	Count   int `json:"count"`
	Minutes int `json:"minutes"`
	// Descendants caps the workspaces that agents started from one
	// workspace made, its children and theirs, alive at once.
	Descendants int `json:"descendants"`
}

// Window is Minutes as a duration.
func (l CreateLimit) Window() time.Duration { return time.Duration(l.Minutes) * time.Minute }

// Settings is the content of settings.json.
type Settings struct {
	// MCPPort is the MCP server's port on 127.0.0.1; 0 picks a free one.
	MCPPort int `json:"mcpPort"`
	// OpencodeBasePort is the first port tried for `opencode serve`; 0
	// lets each server pick a free one.
	OpencodeBasePort int `json:"opencodeBasePort"`
	// OpencodeBin is the opencode executable; "" searches PATH and the
	// tools folder.
	OpencodeBin string `json:"opencodeBin"`
	// WorktreeRoot is where new worktrees go; "" is paths.ProjectsDir().
	WorktreeRoot string `json:"worktreeRoot"`
	// Notifications turns desktop notifications on.
	Notifications bool `json:"notifications"`
	// Projects are the absolute paths of the projects to load.
	Projects []string `json:"projects"`
	// RateLimit bounds MCP tool calls per client.
	RateLimit RateLimit `json:"rateLimit"`
	// ToolTimeoutSeconds bounds one MCP tool call.
	ToolTimeoutSeconds int `json:"toolTimeoutSeconds"`
	// MCPSessionIdleSeconds closes an MCP session that has had no request
	// for this long.
	MCPSessionIdleSeconds int `json:"mcpSessionIdleSeconds"`
	// MCPMaxSessions caps the MCP sessions open at once.
	MCPMaxSessions int `json:"mcpMaxSessions"`
	// MCPMaxConnections caps the connections the MCP server serves at once.
	MCPMaxConnections int `json:"mcpMaxConnections"`
	// TaskTimeoutSeconds bounds one workspace_run_task run (see tasks.go).
	TaskTimeoutSeconds int `json:"taskTimeoutSeconds"`

	// Limits of a running app (issue 11, point 3: logs and agents).

	// LogMaxMB is the size in MiB at which codehydra.log and audit.jsonl
	// are each moved to <file>.1 while running (three old files kept).
	LogMaxMB int `json:"logMaxMB"`
	// WorkspaceCreateLimit bounds the workspaces one MCP caller creates.
	WorkspaceCreateLimit CreateLimit `json:"workspaceCreateLimit"`
	// MaxAgents bounds the opencode agents that run at once; the agent of
	// a workspace past it waits until one stops.
	MaxAgents int `json:"maxAgents"`

	// EditorCommand opens a workspace in an editor ("" picks one, see
	// app/openers.go); TerminalCommand opens a terminal in it. Each is a
	// command line run without a shell (SplitCommand), in the folder, with
	// PathPlaceholder in an argument replaced by the folder.
	EditorCommand   string `json:"editorCommand"`
	TerminalCommand string `json:"terminalCommand"`
	// PRCommand opens a workspace's pull request once its branch is
	// pushed: a command line run without a shell, with the placeholders
	// of PRPlaceholders replaced inside its words; "" is gh's when gh is
	// on PATH (see PRArgv).
	PRCommand string `json:"prCommand"`

	// ProjectSetup readies each new worktree of a project (copies files,
	// runs a setup command) before its agent starts, keyed by the
	// project's absolute path; see ProjectSetup.
	ProjectSetup map[string]ProjectSetup `json:"projectSetup"`

	// MCPServers are the user's own MCP servers, keyed by name, offered
	// to every agent through CodeHydra's MCP server; see MCPServer.
	MCPServers map[string]MCPServer `json:"mcpServers"`
	// PinTools withholds a gateway tool whose definition changed since it
	// was first seen, until the user accepts the change in Settings.
	PinTools bool `json:"pinTools"`
	// WorkspaceDeny are deny patterns the workspace file tools refuse on
	// top of their built-in list; see CheckDenyPattern.
	WorkspaceDeny []string `json:"workspaceDeny"`
	// Sandbox confines what runs for a workspace; see Sandbox.
	Sandbox Sandbox `json:"sandbox"`
	// PreventSleep keeps the computer from sleeping while any agent
	// works (package inhibit).
	PreventSleep bool `json:"preventSleep"`
	// Escalation says who hears first of a child's requests; see Escalation.
	Escalation Escalation `json:"escalation"`
	// HibernateAfterMinutes hibernates an agent that has been idle this
	// long (0 = never).
	HibernateAfterMinutes int `json:"hibernateAfterMinutes"`
	// Ports is where each workspace's block of ports comes from; see Ports.
	Ports Ports `json:"ports"`

	// extra holds the keys of the file that the fields above do not name,
	// verbatim, so that Save writes them back.
	extra map[string]json.RawMessage
}

// Default returns the settings used when there is no settings file.
func Default() Settings {
	return Settings{
		Notifications:         true,
		Projects:              []string{},
		ProjectSetup:          map[string]ProjectSetup{},
		MCPServers:            map[string]MCPServer{},
		PinTools:              true,
		WorkspaceDeny:         []string{},
		Sandbox:               DefaultSandbox(),
		PreventSleep:          true,
		Escalation:            DefaultEscalation(),
		Ports:                 DefaultPorts(),
		RateLimit:             RateLimit{PerSecond: 20, Burst: 40},
		ToolTimeoutSeconds:    30,
		MCPSessionIdleSeconds: 30 * 60,
		MCPMaxSessions:        100,
		MCPMaxConnections:     256,
		TaskTimeoutSeconds:    DefaultTaskTimeoutSeconds,

		LogMaxMB:             10,
		WorkspaceCreateLimit: CreateLimit{Count: 10, Minutes: 10, Descendants: 20},
		MaxAgents:            20,
	}
}

// LogMaxBytes is LogMaxMB in bytes.
func (s Settings) LogMaxBytes() int64 { return int64(s.LogMaxMB) << 20 }

// ToolTimeout is ToolTimeoutSeconds as a duration.
func (s Settings) ToolTimeout() time.Duration {
	return time.Duration(s.ToolTimeoutSeconds) * time.Second
}

// MCPSessionIdle is MCPSessionIdleSeconds as a duration.
func (s Settings) MCPSessionIdle() time.Duration {
	return time.Duration(s.MCPSessionIdleSeconds) * time.Second
}

// Clone returns a copy of s that shares no slice or map with it.
func (s Settings) Clone() Settings {
	c := s
	c.Projects = slices.Clone(s.Projects)
	if c.Projects == nil {
		c.Projects = []string{}
	}
	c.WorkspaceDeny = slices.Clone(s.WorkspaceDeny)
	if c.WorkspaceDeny == nil {
		c.WorkspaceDeny = []string{}
	}
	c.ProjectSetup = cloneProjectSetup(s.ProjectSetup)
	if c.ProjectSetup == nil {
		c.ProjectSetup = map[string]ProjectSetup{}
	}
	c.MCPServers = cloneMCPServers(s.MCPServers)
	if c.MCPServers == nil {
		c.MCPServers = map[string]MCPServer{}
	}
	c.Sandbox = s.Sandbox.Clone()
	if s.extra != nil {
		c.extra = make(map[string]json.RawMessage, len(s.extra))
		for k, v := range s.extra {
			c.extra[k] = slices.Clone(v)
		}
	}
	return c
}

// Validate reports every value out of its allowed range, joined into one
// error whose lines each name the key and what to do.
func (s Settings) Validate() error {
	var errs []error
	checkPort := func(key string, port int) {
		if port < 0 || port > 65535 {
			errs = append(errs, fmt.Errorf("%s is %d: use 0 (pick a free port) or a port from 1 to 65535", key, port))
		}
	}
	checkPort("mcpPort", s.MCPPort)
	checkPort("opencodeBasePort", s.OpencodeBasePort)
	if p := s.RateLimit.PerSecond; !(p > 0) || math.IsInf(p, 0) {
		errs = append(errs, fmt.Errorf("rateLimit.perSecond is %v: use a number above 0", p))
	}
	if s.RateLimit.Burst < 1 {
		errs = append(errs, fmt.Errorf("rateLimit.burst is %d: use 1 or more", s.RateLimit.Burst))
	}
	if t := s.ToolTimeoutSeconds; t < 1 || t > 600 {
		errs = append(errs, fmt.Errorf("toolTimeoutSeconds is %d: use 1 to 600", t))
	}
	errs = append(errs, s.validateRunLimits()...)
	errs = append(errs, s.validateTasks()...)
	errs = append(errs, s.validateCommands()...)
	errs = append(errs, s.validatePullRequests()...)
	errs = append(errs, s.validateProjectSetup()...)
	errs = append(errs, s.validateMCPServers()...)
	errs = append(errs, s.validateWorkspaceDeny()...)
	errs = append(errs, s.validateSandbox()...)
	errs = append(errs, s.validateEscalation()...)
	errs = append(errs, s.validatePorts()...)
	if t := s.MCPSessionIdleSeconds; t < 1 || t > 7*24*60*60 {
		errs = append(errs, fmt.Errorf("mcpSessionIdleSeconds is %d: use 1 to 604800 (a week)", t))
	}
	if n := s.MCPMaxSessions; n < 1 || n > 10000 {
		errs = append(errs, fmt.Errorf("mcpMaxSessions is %d: use 1 to 10000", n))
	}
	// Each agent keeps a few connections open (its event stream, its
	// calls), so a handful would starve the agents themselves.
	if n := s.MCPMaxConnections; n < 16 || n > 65535 {
		errs = append(errs, fmt.Errorf("mcpMaxConnections is %d: use 16 to 65535", n))
	}
	if relativeBin(s.OpencodeBin) {
		errs = append(errs, fmt.Errorf("opencodeBin %q is a relative path: use the absolute path of the opencode executable, a command name to look up on PATH, or \"\" to search PATH and the tools folder", s.OpencodeBin))
	}
	if s.WorktreeRoot != "" && !filepath.IsAbs(s.WorktreeRoot) {
		errs = append(errs, fmt.Errorf("worktreeRoot %q is not an absolute path: use an absolute path or \"\" for the default", s.WorktreeRoot))
	}
	for i, p := range s.Projects {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("projects[%d] %q is not an absolute path: use the absolute path of a git repository", i, p))
		}
	}
	return errors.Join(errs...)
}

// validateRunLimits checks the limits on logs and agents.
func (s Settings) validateRunLimits() []error {
	var errs []error
	if m := s.LogMaxMB; m < 1 || m > 1024 {
		errs = append(errs, fmt.Errorf("logMaxMB is %d: use 1 to 1024 (MiB)", m))
	}
	if c := s.WorkspaceCreateLimit.Count; c < 1 || c > 1000 {
		errs = append(errs, fmt.Errorf("workspaceCreateLimit.count is %d: use 1 to 1000", c))
	}
	if m := s.WorkspaceCreateLimit.Minutes; m < 1 || m > 1440 {
		errs = append(errs, fmt.Errorf("workspaceCreateLimit.minutes is %d: use 1 to 1440", m))
	}
	if d := s.WorkspaceCreateLimit.Descendants; d < 1 || d > 1000 {
		errs = append(errs, fmt.Errorf("workspaceCreateLimit.descendants is %d: use 1 to 1000", d))
	}
	if n := s.MaxAgents; n < 1 || n > 1000 {
		errs = append(errs, fmt.Errorf("maxAgents is %d: use 1 to 1000", n))
	}
	if n := s.HibernateAfterMinutes; n < 0 || n > 10080 {
		errs = append(errs, fmt.Errorf("hibernateAfterMinutes is %d: use 0 (never) to 10080 (a week)", n))
	}
	return errs
}

// relativeBin reports an opencodeBin that is a relative path. It would be
// found from wherever an agent starts: in a workspace, that is a folder of
// the repository's content. A bare command name is looked up on PATH only
// (Go's exec refuses to find it in the current folder).
func relativeBin(bin string) bool {
	return strings.ContainsAny(bin, `/\`) && !filepath.IsAbs(bin)
}

// knownKeys are the JSON names of the Settings fields.
func knownKeys() []string {
	t := reflect.TypeFor[Settings]()
	var keys []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// settingsFields has the fields of Settings without its methods, so that
// encoding/json does not recurse into MarshalJSON.
type settingsFields Settings

// UnmarshalJSON reads the known keys over the values already in s (so keys
// missing from data keep them) and keeps the unknown keys.
func (s *Settings) UnmarshalJSON(data []byte) error {
	fields := settingsFields(*s)
	// json.Unmarshal fills a slice in place; a copy keeps another Settings
	// that shares the backing array untouched.
	fields.Projects = slices.Clone(fields.Projects)
	fields.WorkspaceDeny = slices.Clone(fields.WorkspaceDeny)
	// json.Unmarshal adds to a map it is given: the file's map replaces
	// the one there, which stays only when the file has none.
	setup, servers := fields.ProjectSetup, fields.MCPServers
	fields.ProjectSetup, fields.MCPServers = nil, nil
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	if fields.ProjectSetup == nil {
		fields.ProjectSetup = cloneProjectSetup(setup)
	}
	if fields.MCPServers == nil {
		fields.MCPServers = cloneMCPServers(servers)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	known := knownKeys()
	for k := range all {
		// encoding/json matches names without regard to case, so "MCPPort"
		// has already set MCPPort; keeping it as well would write two
		// spellings of one setting.
		if slices.ContainsFunc(known, func(n string) bool { return strings.EqualFold(n, k) }) {
			delete(all, k)
			continue
		}
		// Compact so that a load after a save gives the same bytes.
		var c bytes.Buffer
		if err := json.Compact(&c, all[k]); err != nil {
			return err
		}
		all[k] = c.Bytes()
	}
	if len(all) == 0 {
		all = nil
	}
	*s = Settings(fields)
	s.extra = all
	if s.Projects == nil {
		s.Projects = []string{}
	}
	if s.WorkspaceDeny == nil {
		s.WorkspaceDeny = []string{}
	}
	if s.ProjectSetup == nil {
		s.ProjectSetup = map[string]ProjectSetup{}
	}
	if s.MCPServers == nil {
		s.MCPServers = map[string]MCPServer{}
	}
	return nil
}

// MarshalJSON writes the known keys in their documented order, then the
// unknown keys that were read, sorted.
func (s Settings) MarshalJSON() ([]byte, error) {
	fields := settingsFields(s.Clone())
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	if len(s.extra) == 0 {
		return out, nil
	}
	buf := bytes.NewBuffer(out[:len(out)-1]) // drop the closing brace
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.extra {
			if !yield(k) {
				return
			}
		}
	}) {
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(s.extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
