package settings

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DefaultSetupTimeout bounds a project's setup command when its
// setupTimeoutSeconds is 0.
const DefaultSetupTimeout = 10 * time.Minute

// maxSetupTimeoutSeconds is a day: a setup that runs longer is stuck.
const maxSetupTimeoutSeconds = 24 * 60 * 60

// DefaultTeardownTimeout bounds a project's teardown command when its
// teardownTimeoutSeconds is 0.
const DefaultTeardownTimeout = time.Minute

// maxTeardownTimeoutSeconds is an hour: a delete waits that long at most.
const maxTeardownTimeoutSeconds = 60 * 60

// ProjectSetup readies every new worktree of one project before its agent
// starts (the settings' projectSetup, keyed by the project's absolute
// path). It comes from the user's settings only, never from a file of the
// repository: opening a repository must not run its commands.
type ProjectSetup struct {
	// Copy are glob patterns (filepath.Match, "/"-separated, relative to
	// the project's main checkout) of untracked or ignored files copied
	// into the new worktree at the same path. A pattern that matches a
	// folder copies the untracked files under it.
	Copy []string `json:"copy,omitempty"`
	// Setup is a command line run in the new worktree, without a shell
	// (SplitCommand); "" runs nothing. A user who wants a shell writes it
	// out: sh -c "npm ci && make".
	Setup string `json:"setup,omitempty"`
	// SetupTimeoutSeconds ends the setup (its whole process group) when it
	// runs longer; 0 is DefaultSetupTimeout.
	SetupTimeoutSeconds int `json:"setupTimeoutSeconds,omitempty"`
	// Run is the project's dev server: a command line (like Setup) run in
	// a workspace as its background task "project:run", with the
	// workspace's ports in its environment. It readies nothing, so Empty
	// does not count it.
	Run string `json:"run,omitempty"`
	// Teardown is a command line (like Setup) run in a workspace before it
	// is deleted, with its ports in its environment; a teardown that fails
	// keeps the workspace unless the delete is forced. It readies nothing,
	// so Empty does not count it.
	Teardown string `json:"teardown,omitempty"`
	// TeardownTimeoutSeconds ends the teardown (its whole process group)
	// when it runs longer, which fails it; 0 is DefaultTeardownTimeout.
	TeardownTimeoutSeconds int `json:"teardownTimeoutSeconds,omitempty"`
	// Remote is the git remote that the project's workspaces are pushed
	// to for a pull request; "" is DefaultRemote. It readies nothing, so
	// Empty does not count it.
	Remote string `json:"remote,omitempty"`
	// MCPServers names the mcpServers that the project's workspaces see
	// (each workspace's tray toggle can switch one of them off for it);
	// nil sees them all, [] none. A name no server has is ignored, so
	// that removing a server leaves the projects valid. It readies
	// nothing, so Empty does not count it.
	MCPServers []string `json:"mcpServers,omitzero"`
}

// Offers reports whether the project's workspaces see the MCP server
// named server (see MCPServers).
func (p ProjectSetup) Offers(server string) bool {
	return p.MCPServers == nil || slices.Contains(p.MCPServers, server)
}

// ProjectOf returns the settings of the project at path (zero when it has
// none), whether or not they ready anything.
func (s Settings) ProjectOf(path string) ProjectSetup {
	p, ok := s.ProjectSetup[path]
	if !ok {
		p = s.ProjectSetup[filepath.Clean(path)]
	}
	return p
}

// Empty reports a setup that does nothing.
func (p ProjectSetup) Empty() bool {
	return len(p.Copy) == 0 && strings.TrimSpace(p.Setup) == ""
}

// SetupTimeout is SetupTimeoutSeconds as a duration, DefaultSetupTimeout
// for 0.
func (p ProjectSetup) SetupTimeout() time.Duration {
	if p.SetupTimeoutSeconds == 0 {
		return DefaultSetupTimeout
	}
	return time.Duration(p.SetupTimeoutSeconds) * time.Second
}

// TeardownTimeout is TeardownTimeoutSeconds as a duration,
// DefaultTeardownTimeout for 0.
func (p ProjectSetup) TeardownTimeout() time.Duration {
	if p.TeardownTimeoutSeconds == 0 {
		return DefaultTeardownTimeout
	}
	return time.Duration(p.TeardownTimeoutSeconds) * time.Second
}

// SetupFor returns the setup of the project at path, and whether there is
// one that does something.
func (s Settings) SetupFor(path string) (ProjectSetup, bool) {
	p, ok := s.ProjectSetup[path]
	if !ok {
		p, ok = s.ProjectSetup[filepath.Clean(path)]
	}
	return p, ok && !p.Empty()
}

// cloneProjectSetup copies m so that the copy shares no slice or map.
func cloneProjectSetup(m map[string]ProjectSetup) map[string]ProjectSetup {
	if m == nil {
		return nil
	}
	c := maps.Clone(m)
	for k, v := range c {
		v.Copy = slices.Clone(v.Copy)
		v.MCPServers = slices.Clone(v.MCPServers)
		c[k] = v
	}
	return c
}

// CheckCopyPattern reports what is wrong with a copy pattern: it must be
// a valid glob, relative, and stay inside the main checkout.
func CheckCopyPattern(pattern string) error {
	switch {
	case strings.TrimSpace(pattern) == "":
		return fmt.Errorf("a copy pattern is empty: remove it")
	case filepath.IsAbs(pattern) || strings.HasPrefix(pattern, "/") || strings.HasPrefix(pattern, `\`):
		return fmt.Errorf("copy pattern %q is absolute: write it relative to the project's folder", pattern)
	case slices.Contains(strings.FieldsFunc(pattern, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
		return fmt.Errorf("copy pattern %q leaves the project's folder with ..: name files inside it", pattern)
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return fmt.Errorf("copy pattern %q is not a valid glob: %w", pattern, err)
	}
	return nil
}

// validateProjectSetup checks every project's setup.
func (s Settings) validateProjectSetup() []error {
	var errs []error
	for _, path := range slices.Sorted(maps.Keys(s.ProjectSetup)) {
		p := s.ProjectSetup[path]
		key := fmt.Sprintf("projectSetup[%q]", path)
		if !filepath.IsAbs(path) {
			errs = append(errs, fmt.Errorf("%s: %q is not an absolute path: key each project by the absolute path of its repository", key, path))
		}
		for _, pat := range p.Copy {
			if err := CheckCopyPattern(pat); err != nil {
				errs = append(errs, fmt.Errorf("%s.copy: %w", key, err))
			}
		}
		for _, c := range []struct{ name, line string }{{"setup", p.Setup}, {"run", p.Run}, {"teardown", p.Teardown}} {
			if err := CheckCommand(key+"."+c.name, c.line); err != nil {
				errs = append(errs, err)
			}
		}
		for _, name := range p.MCPServers {
			if strings.TrimSpace(name) == "" {
				errs = append(errs, fmt.Errorf("%s.mcpServers: a name is empty: remove it, or name a server of mcpServers", key))
			}
		}
		if err := CheckRemote(p.Remote); err != nil {
			errs = append(errs, fmt.Errorf("%s.remote: %w", key, err))
		}
		if t := p.SetupTimeoutSeconds; t < 0 || t > maxSetupTimeoutSeconds {
			errs = append(errs, fmt.Errorf("%s.setupTimeoutSeconds is %d: use 1 to %d, or 0 for %d", key, t, maxSetupTimeoutSeconds, int(DefaultSetupTimeout.Seconds())))
		}
		if t := p.TeardownTimeoutSeconds; t < 0 || t > maxTeardownTimeoutSeconds {
			errs = append(errs, fmt.Errorf("%s.teardownTimeoutSeconds is %d: use 1 to %d, or 0 for %d", key, t, maxTeardownTimeoutSeconds, int(DefaultTeardownTimeout.Seconds())))
		}
	}
	return errs
}
