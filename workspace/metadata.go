package workspace

import (
	"context"
	"slices"
	"strings"
)

// Metadata lives in the project's git config (shared by all its worktrees)
// as branch.<branch>.codehydra.<key>. Git treats the last part of a config
// name case-insensitively and lowercases it, so metadata keys are
// case-insensitive: "Foo" and "foo" are the same key, and keys are always
// reported lowercased.

const metadataSection = "codehydra"

// MetadataCreatedBy is the metadata key (as Metadata reports it) holding
// the path of the workspace whose agent created the workspace; absent when
// the user created it. Only Create writes it: SetMetadata refuses it, so
// that no agent can claim another's workspace or disown its own.
const MetadataCreatedBy = "createdby"

// MetadataPR is the metadata key holding the address of the workspace's
// pull request, as workspace_create_pr and the tray's Create pull request
// record it.
const MetadataPR = "pr"

// splitNames splits a comma-separated list, dropping empty names.
func splitNames(s string) []string {
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// recordCreator records creator as the creator of branch's workspace, or,
// for the user's create ("") of a branch that had one, forgets the old
// creator: the workspace is the user's now.
func (m *Manager) recordCreator(ctx context.Context, p *project, branch, creator string) error {
	p.configMu.Lock()
	defer p.configMu.Unlock()
	if creator == "" {
		return m.configUnsetLocked(ctx, p, metadataVar(branch, MetadataCreatedBy))
	}
	return m.configSetLocked(ctx, p, metadataVar(branch, MetadataCreatedBy), creator)
}

// metadataVar is the git config name of a metadata key of branch.
func metadataVar(branch, key string) string {
	return "branch." + branch + "." + metadataSection + "." + strings.ToLower(key)
}

// configGet reads one git config value of the project; "" and no error
// when it is not set.
func (m *Manager) configGet(ctx context.Context, p *project, name string) (string, error) {
	out, err := m.git.run(ctx, p.Path, "config", "--local", "--get", name)
	if exitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// configSet writes one git config value of the project.
func (m *Manager) configSet(ctx context.Context, p *project, name, value string) error {
	p.configMu.Lock()
	defer p.configMu.Unlock()
	return m.configSetLocked(ctx, p, name, value)
}

// configSetLocked is configSet with p.configMu held.
func (m *Manager) configSetLocked(ctx context.Context, p *project, name, value string) error {
	// "--" keeps a value that starts with "-" from reading as an option.
	_, err := m.git.run(ctx, p.Path, "config", "--local", "--", name, value)
	return err
}

// configUnsetLocked removes a git config value of the project, with
// p.configMu held; a value that is not set is no error.
func (m *Manager) configUnsetLocked(ctx context.Context, p *project, name string) error {
	_, err := m.git.run(ctx, p.Path, "config", "--local", "--unset-all", name)
	if exitCode(err) == 5 { // "you try to unset an option which does not exist"
		return nil
	}
	return err
}

// removeMetadata removes every metadata key of branch, and the record that
// CodeHydra created it (which `git branch -D` removes too, unless the
// config was locked then); none is no error. A delete calls it only once
// branch is gone.
func (m *Manager) removeMetadata(ctx context.Context, p *project, branch string) error {
	p.configMu.Lock()
	defer p.configMu.Unlock()
	_, err := m.git.run(ctx, p.Path, "config", "--local", "--remove-section", "branch."+branch+"."+metadataSection)
	if err != nil && !strings.Contains(stderrOf(err), "no such section") {
		return err
	}
	if strings.HasSuffix(branch, "."+metadataSection) {
		// Its record's name is a metadata key of another branch (see
		// createdBranch), which is not this delete's to remove.
		return nil
	}
	return m.configUnsetLocked(ctx, p, createdVar(branch))
}

// configList reads the project's own git config (the common git folder's,
// includes not followed): each name as git reports it (section and key
// lowercased, subsection as written) with its last value.
func (m *Manager) configList(ctx context.Context, p *project) (map[string]string, error) {
	out, err := m.git.run(ctx, p.Path, "config", "--local", "-z", "--list")
	if err != nil {
		return nil, err
	}
	cfg := map[string]string{}
	for rec := range strings.SplitSeq(out, "\x00") {
		if name, value, _ := strings.Cut(rec, "\n"); name != "" {
			cfg[name] = value
		}
	}
	return cfg, nil
}

// workspaceConfig is the project's git config as one workspace's read
// found it: the workspace, its project, the branch checked out there ("" on
// a detached HEAD) and the config (see configList).
type workspaceConfig struct {
	ws     Workspace
	p      *project
	branch string
	cfg    map[string]string
}

// readConfigOf reads the project's git config for the workspace at wsPath.
func (m *Manager) readConfigOf(ctx context.Context, wsPath string) (workspaceConfig, error) {
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return workspaceConfig{}, err
	}
	// Metadata follows the branch, so it is read fresh.
	branch, err := m.currentBranch(ctx, ws.Path)
	if err != nil {
		return workspaceConfig{}, classify(err, CodeInternal, "cannot read the branch of %s", ws.Path)
	}
	cfg, err := m.configList(ctx, p)
	if err != nil {
		return workspaceConfig{}, classify(err, CodeInternal, "cannot read the metadata of %s", ws.Path)
	}
	return workspaceConfig{ws: ws, p: p, branch: branch, cfg: cfg}, nil
}

// metadataOf returns the metadata keys of branch (lowercased) and their
// values in the project's config cfg (see configList).
func metadataOf(cfg map[string]string, branch string) map[string]string {
	prefix := "branch." + branch + "." + metadataSection + "."
	md := map[string]string{}
	for name, value := range cfg {
		key, ok := strings.CutPrefix(name, prefix)
		if !ok || ValidateMetadataKey(key) != nil {
			continue
		}
		md[key] = value
	}
	return md
}

// currentBranch reads the branch checked out in the worktree at path now,
// "" when its HEAD is detached. Metadata follows the branch, so it is read
// fresh rather than from what discovery last saw.
func (m *Manager) currentBranch(ctx context.Context, path string) (string, error) {
	out, err := m.git.run(ctx, path, "symbolic-ref", "-q", "--short", "HEAD")
	if exitCode(err) == 1 {
		// Also what git answers, pinned to the worktree's folder, while a
		// delete removes that folder's HEAD.
		if m.workspaceGone(path) {
			return "", goneError(path, err)
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Metadata returns the workspace's metadata, keys lowercased. "base" is
// always there: when it was never recorded (e.g. a worktree made outside
// the app) or the HEAD is detached, it is the project's DefaultBase. It
// holds MetadataMCPOff, which is the worktree's, whatever is checked out.
func (m *Manager) Metadata(ctx context.Context, wsPath string) (map[string]string, error) {
	c, err := m.readConfigOf(ctx, wsPath)
	if err != nil {
		return nil, err
	}
	ws, p := c.ws, c.p
	md := map[string]string{}
	if c.branch != "" {
		md = metadataOf(c.cfg, c.branch)
	}
	// The servers switched off belong to the worktree, not to the branch.
	delete(md, MetadataMCPOff)
	off, err := m.mcpOff(ctx, c)
	if err != nil {
		return nil, err
	}
	if len(off) > 0 {
		md[MetadataMCPOff] = strings.Join(off, ",")
	}
	if md["base"] == "" {
		base, err := m.defaultBase(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			m.log.Warn("workspace has no base", "path", ws.Path, "err", err)
		}
		md["base"] = base
	}
	return md, nil
}

// baseOf is the base of the workspace on branch: its "base" metadata, else
// the project's DefaultBase; "" when neither is known.
func (m *Manager) baseOf(ctx context.Context, p *project, branch string) string {
	if branch != "" {
		if b, err := m.configGet(ctx, p, metadataVar(branch, "base")); err == nil && b != "" {
			return b
		}
	}
	b, _ := m.defaultBase(ctx, p)
	return b
}

// SetMetadata sets the workspace's metadata key to *value, or deletes the
// key when value is nil (deleting a missing key is no error). Keys follow
// ValidateMetadataKey and are case-insensitive (see Metadata); values follow
// ValidateMetadataValue. "base" cannot be deleted and must name a branch or
// commit. Metadata is stored per branch, so a workspace on a detached HEAD
// has none to set (CodeInvalidInput). It publishes metadata-changed.
func (m *Manager) SetMetadata(ctx context.Context, wsPath, key string, value *string) error {
	if err := ValidateMetadataKey(key); err != nil {
		return err
	}
	if strings.EqualFold(key, MetadataCreatedBy) {
		return Errorf(CodeForbidden, "createdBy is recorded by CodeHydra when an agent creates a workspace and cannot be set or deleted")
	}
	if strings.EqualFold(key, MetadataMCPOff) {
		return Errorf(CodeForbidden, "mcpOff lists the MCP servers the user switched off for this workspace in the tray (the workspace's submenu); only the user changes it there")
	}
	return m.setMetadata(ctx, wsPath, key, value)
}

// setMetadata is SetMetadata without the refusal of the keys only
// CodeHydra writes.
func (m *Manager) setMetadata(ctx context.Context, wsPath, key string, value *string) error {
	isBase := strings.EqualFold(key, "base")
	switch {
	case value == nil && isBase:
		return Errorf(CodeInvalidInput, "the base metadata cannot be deleted; set another base instead")
	case value != nil:
		if err := ValidateMetadataValue(*value); err != nil {
			return err
		}
		if isBase {
			if err := validateBase(*value); err != nil {
				return err
			}
		}
	}
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return err
	}
	branch, err := m.currentBranch(ctx, ws.Path)
	if err != nil {
		return classify(err, CodeInternal, "cannot read the branch of %s", ws.Path)
	}
	if branch == "" {
		return Errorf(CodeInvalidInput, "workspace %s is on a detached HEAD; metadata is stored per branch, so check out a branch there first", ws.Path)
	}
	name := metadataVar(branch, key)
	p.configMu.Lock()
	if !m.stillWritable(p, ws.Path) {
		p.configMu.Unlock()
		return goneError(ws.Path, nil)
	}
	if value == nil {
		err = m.configUnsetLocked(ctx, p, name)
	} else {
		err = m.configSetLocked(ctx, p, name, *value)
	}
	p.configMu.Unlock()
	if err != nil {
		return classify(err, CodeInternal, "cannot %s metadata %s of %s", verb(value), strings.ToLower(key), ws.Path)
	}
	m.Publish(Event{Kind: EventMetadataChanged, ProjectPath: p.Path, Workspace: ws})
	return nil
}

func verb(value *string) string {
	if value == nil {
		return "delete"
	}
	return "set"
}

// Which branches CodeHydra created is recorded beside the branch's own git
// config (branch.<branch>.codehydracreated), not among its metadata: an
// agent can set metadata, and must not be able to mark a branch of the
// user's as the app's to delete. `git branch -D` removes the record with
// the branch, so a later branch of the same name made by hand has none.

// createdVar is the git config name of the record that CodeHydra created
// branch.
func createdVar(branch string) string { return "branch." + branch + ".codehydracreated" }

// recordCreatedBranch records whether CodeHydra created branch: a branch
// that Create reuses existed before the workspace, so it loses a record
// an earlier workspace left.
func (m *Manager) recordCreatedBranch(ctx context.Context, p *project, branch string, created bool) error {
	p.configMu.Lock()
	defer p.configMu.Unlock()
	if created {
		return m.configSetLocked(ctx, p, createdVar(branch), "true")
	}
	return m.configUnsetLocked(ctx, p, createdVar(branch))
}

// BranchCreated reports whether CodeHydra created the branch of the
// workspace at wsPath for that workspace, so that deleting the workspace
// deletes the branch too (a branch that existed before is kept unless
// DeleteBranch is set). A detached HEAD has no branch, and a branch
// created for another workspace (a sibling's, checked out here since) is
// not this one's: false.
func (m *Manager) BranchCreated(ctx context.Context, wsPath string) (bool, error) {
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return false, err
	}
	branch, err := m.currentBranch(ctx, ws.Path)
	if err != nil {
		return false, classify(err, CodeInternal, "cannot read the branch of %s", ws.Path)
	}
	if branch == "" {
		return false, nil
	}
	created, err := m.createdBranch(ctx, p, branch)
	if err != nil {
		return false, classify(err, CodeInternal, "cannot read the records of branch %s", branch)
	}
	return created && ownBranch(ws, branch), nil
}

// createdBranch reports whether CodeHydra created branch. For a branch
// named "<X>.codehydra" the record shares its config name with a metadata
// key of branch X, which an agent can set; such a branch counts as not
// created, so it is kept.
func (m *Manager) createdBranch(ctx context.Context, p *project, branch string) (bool, error) {
	if strings.HasSuffix(branch, "."+metadataSection) {
		return false, nil
	}
	v, err := m.configGet(ctx, p, createdVar(branch))
	return v == "true", err
}
