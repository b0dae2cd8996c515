package app

import (
	"context"
	"log/slog"

	"fyne.io/fyne/v2"

	"codehydra/workspace"
)

// CreatedByLine is the first line of the submenu of a workspace that
// another workspace's agent created, e.g. "created by featA"; "" for a
// workspace the user made. A creator that is gone is named by its folder.
func CreatedByLine(s State, w WorkspaceState) string {
	if w.CreatedBy == "" {
		return ""
	}
	name := baseName(w.CreatedBy)
	for _, p := range s.Projects {
		for _, o := range p.Workspaces {
			if o.Workspace.Path == w.CreatedBy {
				name = o.Workspace.Name
			}
		}
	}
	return "created by " + name
}

// createdByItems are the submenu's lines that name the creator, if any.
func createdByItems(s State, w WorkspaceState) []*fyne.MenuItem {
	line := CreatedByLine(s, w)
	if line == "" {
		return nil
	}
	return []*fyne.MenuItem{disabled(line), fyne.NewMenuItemSeparator()}
}

// workspaceMetadata is what the tray keeps of a workspace's metadata.
type workspaceMetadata struct {
	// createdBy is the workspace whose agent created this one, "" when
	// none did; base the branch it lands in.
	createdBy, base string
	// mcpOff are the MCP servers switched off for it.
	mcpOff []string
}

// metadata reads which workspace's agent created the workspace at path
// (its createdBy metadata) and its base; empty when they cannot be read.
func (t *Tray) metadata(ctx context.Context, path string) workspaceMetadata {
	md, err := t.deps.Workspaces.Metadata(ctx, path)
	if err != nil {
		t.log.DebugContext(ctx, "read the metadata of a workspace", slog.String("workspace", path), slog.Any("err", err))
		return workspaceMetadata{}
	}
	return workspaceMetadata{createdBy: md[workspace.MetadataCreatedBy], base: md["base"], mcpOff: mcpOff(md)}
}

// ahead counts the commits of a child workspace that its base lacks, for
// its "ready for review"; 0 for a workspace the user made, whose status is
// not read. The status comes from the status cache, which answers without
// git once it follows the workspace, and tells each change with a
// status-changed event.
func (t *Tray) ahead(ctx context.Context, path string, md workspaceMetadata) int {
	if md.createdBy == "" {
		return 0
	}
	st, err := t.deps.Workspaces.Status(ctx, path)
	if err != nil {
		t.log.DebugContext(ctx, "read the status of a workspace", slog.String("workspace", path), slog.Any("err", err))
		return 0
	}
	return st.Ahead
}
