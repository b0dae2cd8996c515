package window

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/settings"
)

// The choices of a server's kind and scope in the form.
const (
	kindStdio      = "Program (stdio)"
	kindRemote     = "Remote (URL)"
	scopeShared    = "Shared: one for all workspaces"
	scopeWorkspace = "Per workspace: one in each, with it as root"
)

// mcpServerForm adds or edits one MCP server. Env and header values are
// shown here: they are the user's own, typed by them.
type mcpServerForm struct {
	e *mcpServersEditor
	// editing is the name of the server being edited; "" for a new one.
	editing  string
	title    *widget.Label
	name     *field
	kind     *widget.RadioGroup
	command  *field
	args     *field
	env      *field
	url      *field
	headers  *field
	stdio    *fyne.Container
	remote   *fyne.Container
	scope    *widget.RadioGroup
	confine  *widget.Check
	atLaunch *widget.Check
	status   *widget.Label
	save     *widget.Button
	cancel   *widget.Button
	content  fyne.CanvasObject
}

func newMCPServerForm(e *mcpServersEditor, escape func()) *mcpServerForm {
	f := &mcpServerForm{e: e, status: statusLabel()}
	f.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	f.name = newField(f.checkName)
	f.name.SetPlaceHolder("e.g. github (its tools become github__<tool>)")
	f.command = newField(func(s string) error { return serverReason(settings.MCPServer{Command: s}, s == "") })
	f.command.SetPlaceHolder("npx, or the program's absolute path")
	f.args = multiField(func(s string) error {
		return serverReason(settings.MCPServer{Command: "x", Args: lines(s), Scope: settings.ScopeWorkspace}, false)
	}, "one argument a line, e.g.\n-y\n@modelcontextprotocol/server-github")
	f.env = multiField(func(s string) error {
		env, err := pairs(s, "=", "env")
		if err != nil {
			return err
		}
		return serverReason(settings.MCPServer{Command: "x", Env: env, Scope: settings.ScopeWorkspace}, false)
	}, "NAME=VALUE a line; a value may be {env:NAME}, e.g.\nGITHUB_TOKEN={env:GITHUB_TOKEN}")
	f.url = newField(func(s string) error {
		return serverReason(settings.MCPServer{URL: s, Scope: settings.ScopeWorkspace}, s == "")
	})
	f.url.SetPlaceHolder("https://example.com/mcp (http only on 127.0.0.1)")
	f.headers = multiField(func(s string) error {
		h, err := pairs(s, ":", "headers")
		if err != nil {
			return err
		}
		return serverReason(settings.MCPServer{URL: "https://x", Headers: h, Scope: settings.ScopeWorkspace}, false)
	}, "Name: value a line, e.g.\nAuthorization: Bearer {env:API_TOKEN}")
	f.kind = widget.NewRadioGroup([]string{kindStdio, kindRemote}, f.showKind)
	f.kind.Horizontal, f.kind.Required = true, true
	f.scope = widget.NewRadioGroup([]string{scopeShared, scopeWorkspace}, nil)
	f.scope.Required = true
	f.confine = widget.NewCheck("Confine: refuse calls with a path outside the caller's workspace (scope workspace only)", nil)
	f.atLaunch = widget.NewCheck("Start when CodeHydra starts (else on first use)", nil)
	f.save = widget.NewButton("Save server", f.submit)
	f.save.Importance = widget.HighImportance
	f.cancel = widget.NewButton("Back", f.close)
	for _, fl := range []*field{f.name, f.command, f.args, f.env, f.url, f.headers} {
		fl.onEscape = escape
	}

	row := func(label string, obj fyne.CanvasObject) []fyne.CanvasObject {
		return []fyne.CanvasObject{widget.NewLabel(label), obj}
	}
	f.stdio = container.New(layout.NewFormLayout(), slices.Concat(
		row("Command", f.command.withReason()), row("Arguments", f.args.withReason()), row("Environment", f.env.withReason()))...)
	f.remote = container.New(layout.NewFormLayout(), slices.Concat(
		row("URL", f.url.withReason()), row("Headers", f.headers.withReason()))...)
	top := container.New(layout.NewFormLayout(), slices.Concat(row("Name", f.name.withReason()), row("Kind", f.kind))...)
	bottom := container.New(layout.NewFormLayout(), slices.Concat(
		row("Scope", f.scope), row("", container.NewVBox(f.confine, f.atLaunch)))...)
	f.content = container.NewBorder(f.title,
		container.NewVBox(f.status, container.NewHBox(layout.NewSpacer(), f.cancel, f.save)), nil, nil,
		container.NewVScroll(container.NewVBox(top, f.stdio, f.remote, bottom)))
	return f
}

// multiField is a field of several lines.
func multiField(validate func(string) error, placeholder string) *field {
	f := newField(validate)
	f.MultiLine = true
	f.Wrapping = fyne.TextWrapOff
	f.SetMinRowsVisible(3)
	f.SetPlaceHolder(placeholder)
	return f
}

// open shows the form for the server called name, or for a new one.
func (f *mcpServerForm) open(name string) {
	m := f.e.u.deps.Settings.Get().MCPServers[name]
	f.editing = name
	f.title.SetText("New MCP server")
	if name != "" {
		f.title.SetText("MCP server " + name)
	}
	f.name.SetText(name)
	f.command.SetText(m.Command)
	f.args.SetText(strings.Join(m.Args, "\n"))
	f.env.SetText(joinPairs(m.Env, "="))
	f.url.SetText(m.URL)
	f.headers.SetText(joinPairs(m.Headers, ": "))
	f.kind.SetSelected(kindStdio)
	if m.Remote() {
		f.kind.SetSelected(kindRemote)
	}
	f.scope.SetSelected(scopeShared)
	if m.PerWorkspace() {
		f.scope.SetSelected(scopeWorkspace)
	}
	f.confine.SetChecked(m.Confine)
	f.atLaunch.SetChecked(m.StartAtLaunch)
	say(f.status, "", false)
	say(f.e.status, "", false)
	f.e.list.Hide()
	f.content.Show()
}

// close goes back to the list, dropping what was not saved.
func (f *mcpServerForm) close() {
	f.content.Hide()
	f.e.list.Show()
	f.e.refresh()
}

// showKind shows the fields of the chosen kind; the other kind's fields
// are disabled, so that they are neither checked nor saved.
func (f *mcpServerForm) showKind(kind string) {
	stdio := kind != kindRemote
	for _, fl := range []*field{f.command, f.args, f.env} {
		setEnabled(fl, stdio)
	}
	for _, fl := range []*field{f.url, f.headers} {
		setEnabled(fl, !stdio)
	}
	showIf(f.stdio, stdio)
	showIf(f.remote, !stdio)
}

func (f *mcpServerForm) checkName(s string) error {
	if s == "" {
		return nil
	}
	if err := settings.CheckMCPServerName(s); err != nil {
		return errors.New(trimKey(err.Error()))
	}
	if _, taken := f.e.u.deps.Settings.Get().MCPServers[s]; taken && s != f.editing {
		return fmt.Errorf("a server named %s exists already: pick another name, or edit that one", s)
	}
	return nil
}

// read turns the form into a server; the error lists every field that is
// wrong. What the form does not show (enabled, tools, paths, rateLimit,
// set in the settings file) is kept as it was.
func (f *mcpServerForm) read() (string, settings.MCPServer, error) {
	name := strings.TrimSpace(f.name.Text)
	m := f.e.u.deps.Settings.Get().MCPServers[f.editing].Clone()
	m.Command, m.Args, m.Env, m.URL, m.Headers, m.Scope = "", nil, nil, "", nil, ""
	var errs []error
	for _, fl := range []*field{f.name, f.command, f.args, f.env, f.url, f.headers} {
		if err := fl.showReason(); err != nil && !fl.Disabled() {
			errs = append(errs, err)
		}
	}
	if name == "" {
		errs = append(errs, errors.New("give the server a name"))
	}
	if f.kind.Selected == kindRemote {
		m.URL = strings.TrimSpace(f.url.Text)
		m.Headers, _ = pairs(f.headers.Text, ":", "headers")
		if m.URL == "" {
			errs = append(errs, errors.New("give the server's URL"))
		}
	} else {
		m.Command = f.command.Text
		m.Args = lines(f.args.Text)
		m.Env, _ = pairs(f.env.Text, "=", "env")
		if m.Command == "" {
			errs = append(errs, errors.New("give the command that starts the server"))
		}
	}
	if f.scope.Selected == scopeWorkspace {
		m.Scope = settings.ScopeWorkspace
	}
	m.Confine, m.StartAtLaunch = f.confine.Checked, f.atLaunch.Checked
	if len(errs) == 0 {
		errs = m.Check(name)
	}
	if err := m.ConfineProblem(); err != nil {
		errs = append(errs, err)
	}
	return name, m, errors.Join(errs...)
}

// submit saves the server (under its new name when renamed).
func (f *mcpServerForm) submit() {
	name, m, err := f.read()
	if err != nil {
		say(f.status, "Not saved. "+err.Error(), true)
		return
	}
	old := f.editing
	err = f.e.u.deps.Settings.Update(func(s *settings.Settings) {
		if s.MCPServers == nil {
			s.MCPServers = map[string]settings.MCPServer{}
		}
		if old != "" {
			delete(s.MCPServers, old)
		}
		s.MCPServers[name] = m
	})
	if err != nil {
		say(f.status, "Could not save the server: "+err.Error(), true)
		return
	}
	f.e.u.log.Info("MCP server saved", slog.String("server", name))
	f.close()
	say(f.e.status, fmt.Sprintf("Saved %s: agents can call its tools as %s__<tool>.", name, name), false)
}

// keyPrefix is where a settings error names the key it is about, which
// the form shows by putting the reason under the field instead.
var keyPrefix = regexp.MustCompile(`^mcpServers(\["[^"]*"\])?(\.[a-z]+)?: *`)

func trimKey(msg string) string { return keyPrefix.ReplaceAllString(msg, "") }

// serverReason is what m.Check says, without the server's name, for a
// field's reason; empty accepts the field while it is empty.
func serverReason(m settings.MCPServer, empty bool) error {
	if empty {
		return nil
	}
	var msgs []string
	for _, err := range m.Check("x") {
		msgs = append(msgs, trimKey(err.Error()))
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// lines are the text's non-empty lines, trimmed.
func lines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// pairs reads "KEY<sep>VALUE" lines (env, headers) into a map.
func pairs(text, sep, what string) (map[string]string, error) {
	var out map[string]string
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		k, v, ok := strings.Cut(l, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s line %d: write NAME%sVALUE", what, i+1, sep)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s line %d: %s is given twice", what, i+1, k)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// joinPairs writes m as sorted "KEY<sep>VALUE" lines.
func joinPairs(m map[string]string, sep string) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ls = append(ls, k+sep+m[k])
	}
	return strings.Join(ls, "\n")
}
