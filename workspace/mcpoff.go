package workspace

import (
	"context"
	"slices"
	"strings"
)

// MetadataMCPOff is the metadata key (as Metadata reports it) holding the
// MCP servers (settings mcpServers names, comma-separated) that the user
// switched off for the workspace in its tray submenu: the gateway offers
// them no tools there. Only SetMCPServerOff writes it; SetMetadata refuses
// it.
//
// Unlike the other keys it belongs to the worktree, not to its branch: it
// is kept in the project's git config (the common git folder's config,
// which the kernel sandbox lets no agent write) as
// codehydra-worktree.<worktree path>.mcpoff, so that an agent that checks
// out another branch, or detaches its HEAD, keeps the switch-off, and no
// agent switches a server back on for itself.
const MetadataMCPOff = "mcpoff"

// worktreeSection is the git config section of what CodeHydra keeps per
// worktree, its subsection the worktree's path.
const worktreeSection = "codehydra-worktree"

// worktreeVar is the git config name of key of the worktree at path.
func worktreeVar(path, key string) string {
	return worktreeSection + "." + path + "." + strings.ToLower(key)
}

// MCPServersOff returns the MCP servers switched off for the workspace
// (MetadataMCPOff), sorted.
func (m *Manager) MCPServersOff(ctx context.Context, wsPath string) ([]string, error) {
	c, err := m.readConfigOf(ctx, wsPath)
	if err != nil {
		return nil, err
	}
	return m.mcpOff(ctx, c)
}

// mcpOff returns the servers switched off for the worktree of c. A
// switch-off that an earlier CodeHydra kept in the metadata of the branch
// checked out there is moved to the worktree first, once: joined to what
// the worktree has, and removed from the branch.
func (m *Manager) mcpOff(ctx context.Context, c workspaceConfig) ([]string, error) {
	names, err := m.moveMCPOff(ctx, c)
	if err != nil {
		return nil, classify(err, CodeInternal, "cannot read the MCP servers switched off for %s", c.ws.Path)
	}
	return names, nil
}

// moveMCPOff is mcpOff's work.
func (m *Manager) moveMCPOff(ctx context.Context, c workspaceConfig) ([]string, error) {
	p, own, legacy := c.p, worktreeVar(c.ws.Path, MetadataMCPOff), metadataVar(c.branch, MetadataMCPOff)
	if _, ok := c.cfg[legacy]; c.branch == "" || !ok {
		return splitNames(c.cfg[own]), nil
	}
	p.configMu.Lock()
	defer p.configMu.Unlock()
	if !m.stillWritable(p, c.ws.Path) {
		// Being deleted: nothing is moved, and both count.
		return splitNames(c.cfg[own] + "," + c.cfg[legacy]), nil
	}
	// Read again under the lock: another call may have moved it.
	old, err := m.configGet(ctx, p, legacy)
	if err != nil {
		return nil, err
	}
	value, err := m.configGet(ctx, p, own)
	if err != nil {
		return nil, err
	}
	names := splitNames(value + "," + old)
	if len(names) > 0 {
		if err := m.configSetLocked(ctx, p, own, strings.Join(names, ",")); err != nil {
			return nil, err
		}
	}
	if err := m.configUnsetLocked(ctx, p, legacy); err != nil {
		return nil, err
	}
	m.log.Info("moved the MCP servers switched off for a workspace from its branch to its worktree",
		"workspace", c.ws.Path, "branch", c.branch, "servers", strings.Join(names, ","))
	return names, nil
}

// SetMCPServerOff switches the MCP server named server off (or back on)
// for the workspace; it publishes metadata-changed. The switch-off belongs
// to the worktree (see MetadataMCPOff), so it holds whatever is checked
// out there, a detached HEAD included.
func (m *Manager) SetMCPServerOff(ctx context.Context, wsPath, server string, off bool) error {
	if server == "" || strings.ContainsAny(server, ", \t\n") {
		return Errorf(CodeInvalidInput, "%q is not an MCP server's name", server)
	}
	// Reading first moves a switch-off still kept on the branch.
	if _, err := m.MCPServersOff(ctx, wsPath); err != nil {
		return err
	}
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return err
	}
	if err := m.switchMCPServer(ctx, p, ws.Path, server, off); err != nil {
		return classify(err, CodeInternal, "cannot switch the MCP server %s for %s", server, ws.Path)
	}
	m.Publish(Event{Kind: EventMetadataChanged, ProjectPath: p.Path, Workspace: ws})
	return nil
}

// switchMCPServer adds server to, or removes it from, the servers switched
// off for the worktree at path, reading and writing under p.configMu so
// that two switches at once both count.
func (m *Manager) switchMCPServer(ctx context.Context, p *project, path, server string, off bool) error {
	p.configMu.Lock()
	defer p.configMu.Unlock()
	if !m.stillWritable(p, path) {
		return goneError(path, nil)
	}
	name := worktreeVar(path, MetadataMCPOff)
	value, err := m.configGet(ctx, p, name)
	if err != nil {
		return err
	}
	names := slices.DeleteFunc(splitNames(value), func(n string) bool { return n == server })
	if off {
		names = append(names, server)
		slices.Sort(names)
	}
	if len(names) == 0 {
		return m.configUnsetLocked(ctx, p, name)
	}
	return m.configSetLocked(ctx, p, name, strings.Join(names, ","))
}

// removeWorktreeRecords removes what CodeHydra keeps of the worktree at
// path in the project's git config (MetadataMCPOff); none is no error. A
// delete calls it once the worktree is gone, so that a workspace made
// later at the same path starts afresh.
func (m *Manager) removeWorktreeRecords(ctx context.Context, p *project, path string) error {
	p.configMu.Lock()
	defer p.configMu.Unlock()
	_, err := m.git.run(ctx, p.Path, "config", "--local", "--remove-section", worktreeSection+"."+path)
	if err != nil && !strings.Contains(stderrOf(err), "no such section") {
		return err
	}
	return nil
}
