package window

import (
	"codehydra/workspace"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// entry is a text entry that passes Escape on to its window's cancel
// action: a focused widget.Entry swallows every key, so without this a
// window would only answer Escape while nothing has the focus.
type entry struct {
	widget.Entry
	onEscape func()
	// onFocus, when set, runs when the entry gets the keyboard focus.
	onFocus func()
}

func newEntry() *entry {
	e := &entry{}
	e.ExtendBaseWidget(e)
	return e
}

// TypedKey hands Escape to onEscape and every other key to the entry.
func (e *entry) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && e.onEscape != nil {
		e.onEscape()
		return
	}
	e.Entry.TypedKey(ev)
}

// FocusGained tells onFocus.
func (e *entry) FocusGained() {
	e.Entry.FocusGained()
	if e.onFocus != nil {
		e.onFocus()
	}
}

// AcceptsTab is false also for a multi-line entry: Tab then moves on to
// the next field, as in every other field, instead of typing a tab into
// a prompt that no keyboard user could leave.
func (e *entry) AcceptsTab() bool { return false }

// field is an entry that says, right under it and as the user types, why
// its text is not valid: the red mark of a plain entry has no words, and a
// reason shown only after Save is far from the field it is about.
type field struct {
	*entry
	reason *widget.Label
	// onEdit runs after each change, once the reason is shown.
	onEdit func(string)
}

// newField makes a field checked by validate. validate should accept the
// empty text where an empty form is not a mistake yet, so that a field
// emptied on purpose (after a Set) is not flagged.
func newField(validate func(string) error) *field {
	f := &field{entry: newEntry(), reason: widget.NewLabel("")}
	f.reason.Wrapping = fyne.TextWrapWord
	f.reason.Importance = widget.DangerImportance
	f.reason.Hide()
	f.Validator = validate
	f.OnChanged = func(s string) {
		f.showReason()
		if f.onEdit != nil {
			f.onEdit(s)
		}
	}
	return f
}

// showReason checks the text and shows why it is wrong, or hides the
// reason; a disabled field has none, as its text is not used.
func (f *field) showReason() error {
	err := f.Validate()
	if err == nil || f.Disabled() {
		f.reason.SetText("")
		f.reason.Hide()
		return err
	}
	f.reason.SetText(err.Error())
	f.reason.Show()
	return err
}

// Enable enables the field and shows its reason again.
func (f *field) Enable() {
	f.entry.Enable()
	f.showReason()
}

// Disable disables the field and hides its reason.
func (f *field) Disable() {
	f.entry.Disable()
	f.showReason()
}

// withReason is the field with its reason under it, for a form's layout.
func (f *field) withReason() fyne.CanvasObject {
	return container.NewVBox(f, f.reason)
}

// answerEscape makes Escape run cancel in w: through the canvas while
// nothing has the focus, and through each of entries while it has.
func answerEscape(w fyne.Window, cancel func(), entries ...*entry) {
	w.Canvas().SetOnTypedKey(func(ev *fyne.KeyEvent) {
		if ev.Name == fyne.KeyEscape {
			cancel()
		}
	})
	for _, e := range entries {
		e.onEscape = cancel
	}
}

// fitHeight gives win back the height its content needs: a window grows
// when a reason or hint shows under a field, but does not shrink by
// itself when it goes, which leaves a blank band under the buttons.
func fitHeight(win fyne.Window) {
	c := win.Content()
	if c == nil {
		return
	}
	if size := win.Canvas().Size(); size.Height > c.MinSize().Height+1 {
		win.Resize(fyne.NewSize(size.Width, c.MinSize().Height))
	}
}

// projectSelect is a select of projects, labelled as projectChoices does,
// that calls pick with the path of the project chosen. The New workspace
// window and Settings → Projects pick a project this way.
func projectSelect(projects []workspace.Project, pick func(path string)) *widget.Select {
	labels := projectChoices(projects)
	s := widget.NewSelect(labels, func(label string) {
		for i, l := range labels {
			if l == label {
				pick(projects[i].Path)
			}
		}
	})
	s.PlaceHolder = "Choose a project"
	return s
}

// projectChoices are the labels of projects in a select: their names, with
// the path added where two share a name.
func projectChoices(ps []workspace.Project) []string {
	count := map[string]int{}
	for _, p := range ps {
		count[p.Name]++
	}
	labels := make([]string, len(ps))
	for i, p := range ps {
		labels[i] = p.Name
		if count[p.Name] > 1 {
			labels[i] = fmt.Sprintf("%s (%s)", p.Name, p.Path)
		}
	}
	return labels
}

// setEnabled enables or disables a widget.
func setEnabled(w fyne.Disableable, on bool) {
	if on {
		w.Enable()
	} else {
		w.Disable()
	}
}

// statusLabel is a wrapping label for progress and errors.
func statusLabel() *widget.Label {
	l := widget.NewLabel("")
	l.Wrapping = fyne.TextWrapWord
	return l
}

// say shows text in a status label, in red when it reports a failure.
func say(l *widget.Label, text string, bad bool) {
	l.Importance = widget.MediumImportance
	if bad {
		l.Importance = widget.DangerImportance
	}
	l.SetText(text)
	// An empty label still takes a row.
	if text == "" {
		l.Hide()
	} else {
		l.Show()
	}
}

// scrollToShow scrolls s so that all of obj, a part of its content, is in
// sight (its top, when it is taller than s). An input calls it when it
// gets the keyboard focus: Fyne's scroll does not follow the focus, and a
// Tab to an input below the fold would have the user type or tick where
// they cannot see.
func scrollToShow(s *container.Scroll, obj fyne.CanvasObject) {
	d := fyne.CurrentApp().Driver()
	top := d.AbsolutePositionForObject(obj).Y - d.AbsolutePositionForObject(s.Content).Y
	bottom, view := top+obj.Size().Height, s.Size().Height
	off := s.Offset
	switch {
	case top < off.Y || bottom-top > view:
		off.Y = top
	case bottom > off.Y+view:
		off.Y = bottom - view
	default:
		return
	}
	s.ScrollToOffset(off)
}
