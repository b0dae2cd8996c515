package window

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// Question is what a gateway MCP server asks the user during a call whose
// client cannot ask (a KindElicit window's).
type Question struct {
	// Server names the MCP server that asks; Workspace is the workspace
	// whose call it belongs to ("" for the user's token).
	Server, Workspace string
	// Message is the server's text; Schema the requested schema, a flat
	// object of strings, numbers, integers, booleans and enums (MCP's
	// restricted subset of JSON schema).
	Message string
	Schema  json.RawMessage
	// Deadline is when the question is answered cancel if the user has
	// not answered it.
	Deadline time.Time
	// Request, when set, makes this a question of Workspace's agent (its
	// opencode request ID), not of an MCP server: the window then says
	// so, and offers Answer, Reject and Later (which leaves it waiting).
	Request string `json:",omitempty"`
}

// The buttons of an agent's question: accept, decline and cancel.
const (
	LabelAnswer = "Answer"
	LabelReject = "Reject"
	LabelLater  = "Later"
)

// Answer is the user's answer to a Question: Action is "accept" (with
// Content, which fits the schema), "decline" or "cancel".
type Answer struct {
	Action  string
	Content map[string]any
}

// elicitWindow is a Question in a window of its own.
type elicitWindow struct {
	win     fyne.Window
	form    *elicitForm
	status  *widget.Label
	accept  *widget.Button
	decline *widget.Button
	cancel  *widget.Button
	// answered is set once the answer went out: closing the window then
	// answers nothing more.
	answered bool
}

// elicit shows s.Question with a form built from its schema, and tells
// s.Elicited the answer: Accept (once the form is valid), Decline, or
// Cancel, which closing the window, Escape and the deadline also answer.
func (u *UI) elicit(s Spec) *elicitWindow {
	var e *elicitWindow
	u.window(s, func() (fyne.Window, func()) {
		q := *s.Question
		e = &elicitWindow{win: u.app.NewWindow(q.Title())}
		// answer gives the first answer only; closing the window, which
		// each answer does, answers cancel.
		answer := func(a Answer) {
			if e.answered {
				return
			}
			e.answered = true
			if s.Elicited != nil {
				s.Elicited(a)
			}
		}
		answerAndClose := func(a Answer) {
			answer(a)
			e.win.Close()
		}
		who := fmt.Sprintf("The MCP server %q asks, during a call from the workspace %s:", q.Server, q.Workspace)
		whose := "This is the server's own text, not CodeHydra's: give it only what you would give that server yourself."
		accept, decline, cancel := "Accept", "Decline", "Cancel"
		switch {
		case q.Request != "":
			who = fmt.Sprintf("The agent of %s asks:", q.Workspace)
			whose = "This is the agent's own text, not CodeHydra's. Later closes this window and leaves the question waiting in the tray."
			accept, decline, cancel = LabelAnswer, LabelReject, LabelLater
		case q.Workspace == "":
			who = fmt.Sprintf("The MCP server %q asks, during a call with your own token (no workspace):", q.Server)
		}
		head := widget.NewLabelWithStyle(who, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		head.Wrapping = fyne.TextWrapWord
		msg := widget.NewLabel(q.Message)
		msg.Wrapping = fyne.TextWrapWord
		warn := widget.NewLabelWithStyle(whose, fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
		warn.Wrapping = fyne.TextWrapWord
		e.status = statusLabel()
		say(e.status, "", true)
		form, err := newElicitForm(q.Schema)
		e.form = form
		e.cancel = widget.NewButton(cancel, func() { answerAndClose(Answer{Action: "cancel"}) })
		e.decline = widget.NewButton(decline, func() { answerAndClose(Answer{Action: "decline"}) })
		e.accept = widget.NewButton(accept, func() {
			content, err := e.form.content()
			if err != nil {
				say(e.status, err.Error(), true)
				// The reason may take more lines than the empty label did.
				e.win.Content().Refresh()
				return
			}
			answerAndClose(Answer{Action: "accept", Content: content})
		})
		e.accept.Importance = widget.HighImportance
		if err != nil {
			say(e.status, "CodeHydra cannot show this question's form ("+err.Error()+"): decline it or cancel.", true)
			e.accept.Disable()
		}
		// The form scrolls; who asks, and why an Accept was refused,
		// stay in sight.
		e.win.SetContent(container.NewBorder(container.NewVBox(head, msg, warn),
			container.NewVBox(e.status, container.NewHBox(layout.NewSpacer(), e.cancel, e.decline, e.accept)), nil, nil,
			e.form.scroll))
		e.win.Resize(fyne.NewSize(520, 620))
		answerEscape(e.win, e.cancel.OnTapped, e.form.entries...)
		if !q.Deadline.IsZero() {
			t := time.AfterFunc(time.Until(q.Deadline), func() {
				u.do(func() {
					if !e.answered {
						answerAndClose(Answer{Action: "cancel"})
					}
				})
			})
			return e.win, func() {
				t.Stop()
				answer(Answer{Action: "cancel"})
			}
		}
		return e.win, func() { answer(Answer{Action: "cancel"}) }
	})
	return e
}

// Title is the title of the question's window: "CodeHydra: every
// asks" for the MCP server every, "CodeHydra: proj / feat asks" for an
// agent's.
func (q Question) Title() string {
	if q.Request != "" {
		return "CodeHydra: " + q.Workspace + " asks"
	}
	return "CodeHydra: " + q.Server + " asks"
}

// elicitForm is the form of a requested schema: one input per property,
// in the schema's order, in a scroll that keeps the focused input in
// sight.
type elicitForm struct {
	box     *fyne.Container
	scroll  *container.Scroll
	fields  []elicitField
	entries []*entry
}

// elicitField is one property's input and how to read it.
type elicitField struct {
	name     string
	required bool
	// value is the property's value, nil when left empty; an error says
	// why what was given does not fit.
	value func() (any, error)
	// entry is its text entry, for a text or number property.
	entry *entry
}

// elicitSchema is the part of a requested schema the form reads.
type elicitSchema struct {
	Type       string                  `json:"type"`
	Properties map[string]elicitPropty `json:"properties"`
	Required   []string                `json:"required"`
}

type elicitPropty struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	Enum        []string        `json:"enum"`
	Examples    []string        `json:"examples"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []elicitChoice  `json:"oneOf"`
	AnyOf       []elicitChoice  `json:"anyOf"`
	Items       *elicitPropty   `json:"items"`
	Default     json.RawMessage `json:"default"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
}

type elicitChoice struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// newElicitForm builds the form of schema; an error names what it cannot
// show (the form then holds what it could).
func newElicitForm(schema json.RawMessage) (*elicitForm, error) {
	f := &elicitForm{box: container.NewVBox()}
	f.scroll = container.NewVScroll(f.box)
	var s elicitSchema
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return f, fmt.Errorf("its schema: %w", err)
		}
	}
	for _, name := range propertyOrder(schema, s.Properties, s.Required) {
		p := s.Properties[name]
		required := slices.Contains(s.Required, name)
		label := p.Title
		if label == "" {
			label = name
		}
		if required {
			label += " *"
		}
		// A field's title and description scroll into sight with its input.
		block := container.NewVBox(widget.NewLabelWithStyle(label, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		fld, obj, err := f.input(name, p, func() { f.show(block) })
		if err != nil {
			return f, fmt.Errorf("%s: %w", name, err)
		}
		fld.name, fld.required = name, required
		f.fields = append(f.fields, fld)
		if p.Description != "" {
			d := widget.NewLabel(p.Description)
			d.Wrapping = fyne.TextWrapWord
			block.Add(d)
		}
		block.Add(obj)
		f.box.Add(block)
	}
	return f, nil
}

// show scrolls the form so that all of obj, one of its fields, is in
// sight.
func (f *elicitForm) show(obj fyne.CanvasObject) { scrollToShow(f.scroll, obj) }

// propertyOrder is the names of props in the order schema gives them
// (the server's order is the one it meant to ask in), or, when that is
// lost (the schema went through a map on its way), the required ones
// first, each part sorted.
func propertyOrder(schema json.RawMessage, props map[string]elicitPropty, required []string) []string {
	var top struct {
		Properties json.RawMessage `json:"properties"`
	}
	var names []string
	if json.Unmarshal(schema, &top) == nil && len(top.Properties) > 0 {
		d := json.NewDecoder(bytes.NewReader(top.Properties))
		if tok, err := d.Token(); err == nil && tok == json.Delim('{') {
			for d.More() {
				tok, err := d.Token()
				if err != nil {
					break
				}
				var skip json.RawMessage
				if name, ok := tok.(string); !ok || d.Decode(&skip) != nil {
					break
				} else if _, known := props[name]; known && !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
	}
	if len(names) == len(props) && !slices.IsSorted(names) {
		return names
	}
	return slices.SortedFunc(maps.Keys(props), func(a, b string) int {
		ra, rb := slices.Contains(required, a), slices.Contains(required, b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return strings.Compare(a, b)
	})
}

// input makes the input of one property; focused runs when it, or one of
// its parts, gets the keyboard focus.
func (f *elicitForm) input(name string, p elicitPropty, focused func()) (elicitField, fyne.CanvasObject, error) {
	var def any
	if len(p.Default) > 0 {
		_ = json.Unmarshal(p.Default, &def)
	}
	switch {
	case p.Type == "boolean":
		c := newFocusCheck("", focused)
		c.Checked, _ = def.(bool)
		return elicitField{value: func() (any, error) { return c.Checked, nil }}, c, nil
	case p.Type == "array":
		if p.Items == nil {
			return elicitField{}, nil, fmt.Errorf("a list without items")
		}
		values, titles := choices(*p.Items, p.Items.AnyOf)
		if len(values) == 0 {
			return elicitField{}, nil, fmt.Errorf("a list that is not a choice of values")
		}
		// A check box per choice, as widget.CheckGroup draws them, but
		// of the kind that scrolls into sight.
		g := container.NewVBox()
		var checks []*focusCheck
		for _, title := range titles {
			c := newFocusCheck(title, focused)
			checks = append(checks, c)
			g.Add(c)
		}
		if ds, ok := def.([]any); ok {
			for _, d := range ds {
				if i := slices.Index(values, fmt.Sprint(d)); i >= 0 {
					checks[i].Checked = true
				}
			}
		}
		return elicitField{value: func() (any, error) {
			picked := []any{}
			for i, c := range checks {
				if c.Checked {
					picked = append(picked, values[i])
				}
			}
			if len(picked) == 0 {
				return nil, nil
			}
			if p.MinItems != nil && len(picked) < *p.MinItems || p.MaxItems != nil && len(picked) > *p.MaxItems {
				return nil, fmt.Errorf("pick between %d and %d", deref(p.MinItems, 0), deref(p.MaxItems, len(values)))
			}
			return picked, nil
		}}, g, nil
	case p.Type == "string" || p.Type == "":
		if values, titles := choices(p, p.OneOf); len(values) > 0 {
			sel := newFocusSelect(titles, focused)
			if i := slices.Index(values, fmt.Sprint(def)); def != nil && i >= 0 {
				sel.Selected = titles[i]
			}
			return elicitField{value: func() (any, error) {
				if i := slices.Index(titles, sel.Selected); i >= 0 {
					return values[i], nil
				}
				return nil, nil
			}}, sel, nil
		}
		e := newEntry()
		e.onFocus = focused
		if d, ok := def.(string); ok {
			e.SetText(d)
		}
		e.SetPlaceHolder(formatHint(p.Format))
		f.entries = append(f.entries, e)
		var obj fyne.CanvasObject = e
		if len(p.Examples) > 0 {
			// Examples are offered, not imposed: a pick fills the entry,
			// where the user may also type an answer of their own.
			pick := widget.NewRadioGroup(p.Examples, func(v string) {
				if v != "" {
					e.SetText(v)
				}
			})
			e.SetPlaceHolder("or type your own answer")
			obj = container.NewVBox(pick, e)
		}
		return elicitField{entry: e, value: func() (any, error) {
			v := e.Text
			if v == "" {
				return nil, nil
			}
			if n := len([]rune(v)); p.MinLength != nil && n < *p.MinLength || p.MaxLength != nil && n > *p.MaxLength {
				return nil, fmt.Errorf("give between %d and %d characters", deref(p.MinLength, 0), deref(p.MaxLength, n))
			}
			return v, checkFormat(p.Format, v)
		}}, obj, nil
	case p.Type == "number" || p.Type == "integer":
		e := newEntry()
		e.onFocus = focused
		if def != nil {
			e.SetText(fmt.Sprint(def))
		}
		f.entries = append(f.entries, e)
		return elicitField{entry: e, value: func() (any, error) {
			v := strings.TrimSpace(e.Text)
			if v == "" {
				return nil, nil
			}
			n, err := strconv.ParseFloat(v, 64)
			switch {
			case err != nil:
				return nil, fmt.Errorf("give a number")
			case p.Type == "integer" && n != math.Trunc(n):
				return nil, fmt.Errorf("give a whole number")
			case p.Minimum != nil && n < *p.Minimum, p.Maximum != nil && n > *p.Maximum:
				return nil, fmt.Errorf("give a number from %g to %g", derefF(p.Minimum, math.Inf(-1)), derefF(p.Maximum, math.Inf(1)))
			}
			if p.Type == "integer" {
				return int64(n), nil
			}
			return n, nil
		}}, e, nil
	}
	return elicitField{}, nil, fmt.Errorf("a value of type %q", p.Type)
}

// choices are the values of an enum property and the titles shown for
// them: enum (with enumNames, the older titles) or titled entries.
func choices(p elicitPropty, titled []elicitChoice) (values, titles []string) {
	for i, v := range p.Enum {
		t := v
		if i < len(p.EnumNames) {
			t = p.EnumNames[i]
		}
		values, titles = append(values, v), append(titles, t)
	}
	for _, c := range titled {
		t := c.Title
		if t == "" {
			t = c.Const
		}
		values, titles = append(values, c.Const), append(titles, t)
	}
	return values, titles
}

// formatHint is an entry's placeholder for a string format.
func formatHint(format string) string {
	switch format {
	case "email":
		return "name@example.com"
	case "uri":
		return "https://…"
	case "date":
		return "YYYY-MM-DD"
	case "date-time":
		return "YYYY-MM-DDThh:mm:ssZ"
	}
	return ""
}

// checkFormat says why v is not of format.
func checkFormat(format, v string) error {
	var err error
	switch format {
	case "email":
		_, err = mail.ParseAddress(v)
	case "uri":
		var u *url.URL
		if u, err = url.Parse(v); err == nil && u.Scheme == "" {
			err = fmt.Errorf("no scheme")
		}
	case "date":
		_, err = time.Parse(time.DateOnly, v)
	case "date-time":
		_, err = time.Parse(time.RFC3339, v)
	}
	if err != nil {
		return fmt.Errorf("give a %s (%s)", format, formatHint(format))
	}
	return nil
}

func deref(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func derefF(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// content is the form's values, checked against the schema: an error
// names the first property that does not fit, and why.
func (f *elicitForm) content() (map[string]any, error) {
	out := map[string]any{}
	for _, fld := range f.fields {
		v, err := fld.value()
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", fld.name, err)
		case v == nil && fld.required:
			return nil, fmt.Errorf("%s is required", fld.name)
		case v != nil:
			out[fld.name] = v
		}
	}
	return out, nil
}

// focusCheck is a check box that says when it gets the keyboard focus.
type focusCheck struct {
	widget.Check
	onFocus func()
}

func newFocusCheck(text string, onFocus func()) *focusCheck {
	c := &focusCheck{onFocus: onFocus}
	c.Text = text
	c.ExtendBaseWidget(c)
	return c
}

func (c *focusCheck) FocusGained() {
	c.Check.FocusGained()
	c.onFocus()
}

// focusSelect is a list to pick from that says when it gets the keyboard
// focus.
type focusSelect struct {
	widget.Select
	onFocus func()
}

func newFocusSelect(options []string, onFocus func()) *focusSelect {
	s := &focusSelect{onFocus: onFocus}
	s.Options = options
	s.PlaceHolder = "(Select one)"
	s.ExtendBaseWidget(s)
	return s
}

func (s *focusSelect) FocusGained() {
	s.Select.FocusGained()
	s.onFocus()
}
