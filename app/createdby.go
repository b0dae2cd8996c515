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

// createdBy reads which workspace's agent created the workspace at path
// (its createdBy metadata); "" when none did or it cannot be read.
func (t *Tray) createdBy(ctx context.Context, path string) string {
	md, err := t.deps.Workspaces.Metadata(ctx, path)
	if err != nil {
		t.log.DebugContext(ctx, "read the creator of a workspace", slog.String("workspace", path), slog.Any("err", err))
		return ""
	}
	return md[workspace.MetadataCreatedBy]
}
