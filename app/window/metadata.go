package window

import (
	"context"
	"errors"
	"maps"
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// metadataEditor is the Metadata tab: a workspace's metadata (kept in the
// project's git config) as a list of keys and values, with the same rules
// as workspace_set_metadata. It follows metadata-changed events, so a value
// an agent sets shows up while the window is open.
type metadataEditor struct {
	u       *UI
	content fyne.CanvasObject

	choices   []workspace.Workspace
	workspace *widget.Select
	rows      *fyne.Container
	// rowOf holds the row widgets by key.
	rowOf  map[string]metaRow
	key    *field
	value  *field
	set    *widget.Button
	status *widget.Label

	// path is the workspace shown; values its metadata as last read.
	path   string
	values map[string]string
	busy   bool
	// stop ends the watch of the manager's events.
	stop context.CancelFunc
}

// metaRow is one key of the list.
type metaRow struct {
	key, value *widget.Label
	edit, del  *widget.Button
}

func (u *UI) newMetadataEditor() *metadataEditor {
	e := &metadataEditor{u: u, rowOf: map[string]metaRow{}}
	e.workspace = widget.NewSelect(nil, func(string) {
		if i := e.workspace.SelectedIndex(); i >= 0 && i < len(e.choices) {
			e.show(e.choices[i].Path)
		}
	})
	e.workspace.PlaceHolder = "Choose a workspace"
	e.rows = container.NewVBox()
	e.key = newField(func(s string) error {
		if s == "" {
			return nil // an empty key is no mistake yet: Set stays off
		}
		return plainError(workspace.ValidateMetadataKey(s))
	})
	e.key.SetPlaceHolder("key, e.g. note")
	e.key.onEdit = func(string) { e.refresh() }
	e.value = newField(func(s string) error { return plainError(workspace.ValidateMetadataValue(s)) })
	e.value.SetPlaceHolder("value")
	e.value.onEdit = func(string) { e.refresh() }
	e.value.OnSubmitted = func(string) { e.submit() }
	e.set = widget.NewButton("Set", e.submit)
	e.status = statusLabel()

	help := widget.NewLabel("Metadata lives in the project's git config (branch.<branch>.codehydra.<key>); agents read and write it with workspace_get_metadata and workspace_set_metadata. Keys are case-insensitive.")
	help.Wrapping = fyne.TextWrapWord
	editor := container.NewBorder(nil, nil, nil, e.set,
		container.NewGridWithColumns(2, e.key.withReason(), e.value.withReason()))
	e.content = container.NewBorder(
		container.NewVBox(help, e.workspace, widget.NewSeparator()),
		container.NewVBox(widget.NewSeparator(), editor, e.status),
		nil, nil,
		container.NewVScroll(e.rows),
	)

	ctx, stop := context.WithCancel(u.ctx)
	e.stop = stop
	u.follow(ctx, e.loadChoices, e.onEvents)
	e.refresh()
	return e
}

// onEvents follows the manager: a burst of changes costs one reload of the
// list and one of the shown metadata.
func (e *metadataEditor) onEvents(batch []workspace.Event) {
	var relist bool
	var changed []string
	for _, ev := range batch {
		switch ev.Kind {
		case workspace.EventMetadataChanged:
			changed = append(changed, ev.Workspace.Path)
		case workspace.EventWorkspaceAdded, workspace.EventWorkspaceRemoved,
			workspace.EventProjectAdded, workspace.EventProjectRemoved:
			relist = true
		}
	}
	if !relist && len(changed) == 0 {
		return
	}
	e.u.do(func() {
		if relist {
			e.loadChoices()
		}
		if slices.Contains(changed, e.path) {
			e.reload()
		}
	})
}

// loadChoices lists every workspace in the select, in the manager's
// order, keeping the selection.
func (e *metadataEditor) loadChoices() {
	wss := e.u.deps.Workspaces
	var choices []workspace.Workspace
	for _, p := range wss.Projects() {
		list, err := wss.Workspaces(p.Path)
		if err != nil {
			continue
		}
		choices = append(choices, list...)
	}
	e.choices = choices
	labels := make([]string, len(choices))
	selected := -1
	for i, ws := range choices {
		labels[i] = WorkspaceTitle(ws)
		if ws.Path == e.path {
			selected = i
		}
	}
	e.workspace.SetOptions(labels)
	switch {
	case selected >= 0:
		e.workspace.SetSelectedIndex(selected)
	case e.path != "":
		// The workspace shown is gone.
		e.path = ""
		e.workspace.ClearSelected()
		e.fillRows(nil)
		say(e.status, "That workspace no longer exists.", false)
	}
	e.refresh()
}

// selectWorkspace shows the workspace at path.
func (e *metadataEditor) selectWorkspace(path string) {
	for i, ws := range e.choices {
		if ws.Path == path {
			e.workspace.SetSelectedIndex(i)
			return
		}
	}
}

// show switches the editor to the workspace at path.
func (e *metadataEditor) show(path string) {
	if path == e.path {
		return
	}
	e.path = path
	e.fillRows(nil)
	say(e.status, "", false)
	e.reload()
}

// reload reads the shown workspace's metadata again.
func (e *metadataEditor) reload() {
	path := e.path
	if path == "" {
		return
	}
	e.u.background(func(ctx context.Context) {
		md, err := e.u.deps.Workspaces.Metadata(ctx, path)
		e.u.do(func() {
			if e.path != path {
				return
			}
			if err != nil {
				say(e.status, "Cannot read the metadata: "+UserMessage(err), true)
				return
			}
			e.fillRows(md)
		})
	})
}

// fillRows shows md, sorted by key. "base" cannot be deleted.
func (e *metadataEditor) fillRows(md map[string]string) {
	e.values = md
	e.rowOf = map[string]metaRow{}
	e.rows.RemoveAll()
	for _, k := range slices.Sorted(maps.Keys(md)) {
		r := metaRow{
			key:   widget.NewLabelWithStyle(k, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
			value: widget.NewLabel(md[k]),
		}
		r.value.Truncation = fyne.TextTruncateEllipsis
		r.edit = widget.NewButton("Edit", func() {
			e.key.SetText(k)
			e.value.SetText(e.values[k])
		})
		r.del = widget.NewButton("Delete", func() { e.confirmDelete(k) })
		if k == "base" {
			r.del.Disable()
		}
		e.rowOf[k] = r
		e.rows.Add(container.NewBorder(nil, nil, r.key, container.NewHBox(r.edit, r.del), r.value))
	}
	e.rows.Refresh()
}

func (e *metadataEditor) refresh() {
	ok := e.path != "" && !e.busy &&
		workspace.ValidateMetadataKey(e.key.Text) == nil &&
		workspace.ValidateMetadataValue(e.value.Text) == nil
	setEnabled(e.set, ok)
}

// submit sets the key in the entries to the value in the entries.
func (e *metadataEditor) submit() {
	if err := errors.Join(workspace.ValidateMetadataKey(e.key.Text), workspace.ValidateMetadataValue(e.value.Text)); err != nil {
		say(e.status, UserMessage(err), true)
		return
	}
	if e.path == "" {
		say(e.status, "Choose a workspace first.", true)
		return
	}
	v := e.value.Text
	e.apply(e.key.Text, &v)
}

// confirmDelete asks before deleting key: a deleted value cannot be
// brought back.
func (e *metadataEditor) confirmDelete(key string) {
	path := e.path
	msg := "Delete the metadata key " + key + " of this workspace? Its value is lost, and agents no longer see it."
	e.u.confirm("Delete "+key+"?", msg, "Delete", func() {
		if e.path == path {
			e.apply(key, nil)
		}
	})
}

// apply sets key to *value, or deletes it when value is nil.
func (e *metadataEditor) apply(key string, value *string) {
	path := e.path
	e.busy = true
	e.refresh()
	e.u.background(func(ctx context.Context) {
		err := e.u.deps.Workspaces.SetMetadata(ctx, path, key, value)
		e.u.do(func() {
			e.busy = false
			defer e.refresh()
			if err != nil {
				say(e.status, "Not saved: "+UserMessage(err), true)
				return
			}
			if value == nil {
				say(e.status, "Deleted "+key+".", false)
			} else {
				say(e.status, "Saved "+key+".", false)
				e.key.SetText("")
				e.value.SetText("")
			}
			if e.path == path {
				e.reload()
			}
		})
	})
}

// plainError is err's user message as an error, for entry validators.
func plainError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(UserMessage(err))
}
