package window

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/settings"
)

// mcpStatusEvery is how often the MCP servers tab asks for the servers'
// state while the Settings window is open.
const mcpStatusEvery = 2 * time.Second

// mcpServersEditor is the Settings window's "MCP servers" tab: the user's
// own MCP servers (settings mcpServers) with how each is doing, and a form
// to add, edit or remove one. It saves on its own, like the Projects tab;
// main reconfigures the running servers on each save.
type mcpServersEditor struct {
	u       *UI
	rows    *fyne.Container
	empty   *widget.Label
	status  *widget.Label
	add     *widget.Button
	list    fyne.CanvasObject
	form    *mcpServerForm
	content fyne.CanvasObject
	// shown is the server names the rows are for, in order; the rows are
	// rebuilt only when it changes, so that a refresh keeps the buttons.
	shown  []string
	byName map[string]*mcpServerRow
	stop   context.CancelFunc
}

// mcpServerRow is one server in the list.
type mcpServerRow struct {
	name string
	// on switches the server on and off (settings "enabled"), saved at
	// once.
	on       *widget.Check
	kind     *widget.Label
	state    *widget.Label
	lastErr  *widget.Label
	edit     *widget.Button
	remove   *widget.Button
	contents fyne.CanvasObject
}

// newMCPServersEditor builds the tab and starts refreshing the servers'
// state until stop is called; Escape in its fields runs cancel.
func (u *UI) newMCPServersEditor(cancel func()) *mcpServersEditor {
	e := &mcpServersEditor{u: u, rows: container.NewVBox(), status: statusLabel(), byName: map[string]*mcpServerRow{}}
	e.empty = widget.NewLabel("No MCP server yet. Add one, and every agent can call its tools through CodeHydra.")
	e.empty.Wrapping = fyne.TextWrapWord
	e.add = widget.NewButton("Add server…", func() { e.form.open("") })
	e.add.Importance = widget.HighImportance
	intro := widget.NewLabel("CodeHydra starts these servers and offers their tools to every agent as <server>__<tool>, " +
		"behind its own access token, limits and audit log.")
	intro.Wrapping = fyne.TextWrapWord
	e.list = container.NewBorder(intro,
		container.NewVBox(e.status, container.NewHBox(layout.NewSpacer(), e.add)), nil, nil,
		container.NewVScroll(container.NewVBox(e.empty, e.rows)))
	e.form = newMCPServerForm(e, cancel)
	e.form.content.Hide()
	e.content = container.NewStack(e.list, e.form.content)
	e.show(e.statuses())
	e.watch()
	return e
}

// watch refreshes the states every mcpStatusEvery until stop.
func (e *mcpServersEditor) watch() {
	ctx, cancel := context.WithCancel(e.u.ctx)
	e.stop = cancel
	e.u.background(func(context.Context) {
		t := time.NewTicker(mcpStatusEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				st := e.statuses()
				e.u.do(func() {
					if ctx.Err() == nil {
						e.show(st)
					}
				})
			}
		}
	})
}

// statuses asks the gateway, off the Fyne thread when called from watch.
func (e *mcpServersEditor) statuses() map[string]MCPServerStatus {
	if e.u.deps.Gateway == nil {
		return nil
	}
	out := map[string]MCPServerStatus{}
	for _, st := range e.u.deps.Gateway.Statuses() {
		out[st.Name] = st
	}
	return out
}

// refresh shows the saved servers with their current state.
func (e *mcpServersEditor) refresh() { e.show(e.statuses()) }

// show lists the saved servers with their state in st.
func (e *mcpServersEditor) show(st map[string]MCPServerStatus) {
	servers := e.u.deps.Settings.Get().MCPServers
	names := slices.Sorted(maps.Keys(servers))
	if !slices.Equal(names, e.shown) {
		e.rows.RemoveAll()
		clear(e.byName)
		for _, n := range names {
			r := e.newRow(n)
			e.byName[n] = r
			e.rows.Add(r.contents)
		}
		e.shown = names
	}
	showIf(e.empty, len(names) == 0)
	for _, n := range names {
		e.byName[n].set(servers[n], st, e.u.deps.Gateway != nil)
	}
}

func (e *mcpServersEditor) newRow(name string) *mcpServerRow {
	r := &mcpServerRow{name: name, kind: widget.NewLabel(""), state: widget.NewLabel(""), lastErr: statusLabel()}
	r.lastErr.Importance = widget.DangerImportance
	// A long program path wraps instead of widening the window.
	r.kind.Wrapping = fyne.TextWrapWord
	r.on = widget.NewCheck("On", func(on bool) { e.switchServer(name, on) })
	r.edit = widget.NewButton("Edit…", func() { e.form.open(name) })
	r.remove = widget.NewButton("Remove…", func() { e.confirmRemove(name) })
	head := container.NewBorder(nil, nil, nil, container.NewHBox(r.on, r.edit, r.remove),
		widget.NewLabelWithStyle(name, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	r.contents = container.NewVBox(head, r.kind, r.state, r.lastErr, widget.NewSeparator())
	return r
}

// set shows m and its state. Only the command and the remote address's
// host are shown: arguments, env and header values, and a URL's path and
// query, may hold secrets.
func (r *mcpServerRow) set(m settings.MCPServer, statuses map[string]MCPServerStatus, running bool) {
	if r.on.Checked != m.On() {
		r.on.SetChecked(m.On()) // its handler sees nothing to save
	}
	r.kind.SetText(serverSummary(m))
	st, ok := statuses[r.name]
	if !ok {
		st = MCPServerStatus{State: "stopped"}
	}
	r.state.SetText(stateLine(st, m, running))
	r.lastErr.Hide()
	if running && st.State == "failed" && st.LastError != "" {
		r.lastErr.SetText("Last error: " + st.LastError)
		r.lastErr.Show()
	}
}

// serverSummary says what kind of server m is, without its secrets.
func serverSummary(m settings.MCPServer) string {
	var parts []string
	if m.Remote() {
		where := "remote"
		if u, err := url.Parse(m.URL); err == nil && u.Host != "" {
			where += ": " + u.Scheme + "://" + u.Host
		}
		parts = append(parts, where)
	} else {
		parts = append(parts, "program: "+m.Command)
	}
	if m.PerWorkspace() {
		parts = append(parts, "one per workspace")
	} else {
		parts = append(parts, "shared")
	}
	switch {
	case m.Confine && m.ConfineProblem() != nil:
		parts = append(parts, "confine cannot hold here (needs a program of scope per workspace)")
	case m.Confine:
		parts = append(parts, "confined to the caller's workspace")
	}
	if m.StartAtLaunch {
		parts = append(parts, "starts at launch")
	}
	if len(m.Tools.Allow)+len(m.Tools.Deny) > 0 {
		parts = append(parts, "some tools hidden")
	}
	if len(m.Paths.Allow)+len(m.Paths.Deny) > 0 {
		parts = append(parts, "paths narrowed")
	}
	if n := m.RateLimit.PerMinute; n > 0 {
		parts = append(parts, fmt.Sprintf("at most %d calls a minute", n))
	}
	return strings.Join(parts, " · ")
}

// stateLine is the server's state and figures.
func stateLine(st MCPServerStatus, m settings.MCPServer, running bool) string {
	if !m.On() {
		return "Switched off: not started, and its tools are not offered."
	}
	if !running {
		return "Not run in this session."
	}
	state := st.State
	switch st.State {
	case "running":
		if m.PerWorkspace() {
			state = fmt.Sprintf("running (%d instances)", st.Instances)
		}
	case "starting":
		state = "starting…"
	case "stopped":
		state = "stopped (starts on first use)"
	}
	return fmt.Sprintf("%s · %s · %s · %s", state, plural(st.Tools, "tool"), plural(int(st.Calls), "call"), plural(st.Restarts, "restart"))
}

// showIf shows o when on, else hides it.
func showIf(o fyne.CanvasObject, on bool) {
	if on {
		o.Show()
	} else {
		o.Hide()
	}
}

// switchServer saves the server called name switched on or off; the
// gateway starts or stops it at once.
func (e *mcpServersEditor) switchServer(name string, on bool) {
	m, ok := e.u.deps.Settings.Get().MCPServers[name]
	if !ok || m.On() == on {
		return
	}
	err := e.u.deps.Settings.Update(func(s *settings.Settings) {
		m, ok := s.MCPServers[name]
		if !ok {
			return
		}
		m.Enabled = nil
		if !on {
			m.Enabled = new(false)
		}
		s.MCPServers[name] = m
	})
	switch {
	case err != nil:
		say(e.status, "Could not switch "+name+": "+err.Error(), true)
	case on:
		e.u.log.Info("MCP server switched on", slog.String("server", name))
		say(e.status, "Switched "+name+" on: agents can call its tools.", false)
	default:
		e.u.log.Info("MCP server switched off", slog.String("server", name))
		say(e.status, "Switched "+name+" off: it is stopped, and agents no longer see its tools.", false)
	}
	e.refresh()
}

// confirmRemove asks before removing the server called name.
func (e *mcpServersEditor) confirmRemove(name string) {
	e.u.confirm("Remove MCP server "+name+"?",
		fmt.Sprintf("CodeHydra stops %s, and agents can no longer call its tools (%s__…).", name, name),
		"Remove", func() { e.removeServer(name) })
}

func (e *mcpServersEditor) removeServer(name string) {
	err := e.u.deps.Settings.Update(func(s *settings.Settings) { delete(s.MCPServers, name) })
	if err != nil {
		say(e.status, "Could not remove "+name+": "+err.Error(), true)
		return
	}
	e.u.log.Info("MCP server removed", slog.String("server", name))
	say(e.status, "Removed "+name+".", false)
	e.refresh()
}
