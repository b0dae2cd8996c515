package window

import (
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/mcpimport"
	"codehydra/internal/settings"
)

// mcpImport is the MCP servers tab's Import… pane: the servers the user
// configured in Claude Desktop, Claude Code, opencode and VS Code, a tick
// each, and Add. The files are read in this process (the window process
// runs as the user); the ticked servers are saved through the settings
// store like the form's.
type mcpImport struct {
	e     *mcpServersEditor
	found []mcpimport.Found
	// ticks are the found servers' checks, in the order of found; a server
	// that cannot be imported, or was added, has its check disabled.
	ticks      []*focusCheck
	head       *widget.Label
	rows       *fyne.Container
	scroll     *container.Scroll
	copyValues *widget.Check
	// vars says which environment variables the ticked servers need.
	vars    *widget.Label
	status  *widget.Label
	add     *widget.Button
	back    *widget.Button
	content fyne.CanvasObject
}

func newMCPImport(e *mcpServersEditor) *mcpImport {
	im := &mcpImport{e: e, rows: container.NewVBox(), head: statusLabel(), vars: statusLabel(), status: statusLabel()}
	im.scroll = container.NewVScroll(im.rows)
	intro := widget.NewLabel("MCP servers configured in Claude Desktop, Claude Code (~/.claude.json, each project's .mcp.json), " +
		"opencode and VS Code (mcp.json). Tick the ones to add; their references to the environment are kept as {env:NAME}.")
	intro.Wrapping = fyne.TextWrapWord
	im.copyValues = widget.NewCheck("Copy values written out in those files (tokens, keys) into CodeHydra's settings", func(bool) { im.showVars() })
	im.add = widget.NewButton("Add ticked servers", im.submit)
	im.add.Importance = widget.HighImportance
	im.back = widget.NewButton("Back", im.close)
	im.content = container.NewBorder(container.NewVBox(intro, im.head),
		container.NewVBox(im.copyValues, im.vars, im.status, container.NewHBox(layout.NewSpacer(), im.back, im.add)), nil, nil,
		im.scroll)
	return im
}

// open reads the other clients' files and lists their servers.
func (im *mcpImport) open() {
	var projects []string
	for _, p := range im.e.u.deps.Workspaces.Projects() {
		projects = append(projects, p.Path)
	}
	o := mcpimport.Options{Getenv: im.e.u.deps.Getenv, Projects: projects}
	found, errs := mcpimport.Scan(o)
	im.found, im.ticks = found, nil
	im.rows.RemoveAll()
	for i, f := range found {
		im.rows.Add(im.newRow(i, f))
	}
	var head []string
	if len(found) == 0 {
		head = append(head, "No MCP server found. Looked in:\n"+strings.Join(o.Sources(), "\n"))
	}
	for _, err := range errs {
		head = append(head, "Could not read "+err.Error())
	}
	say(im.head, strings.Join(head, "\n"), len(errs) > 0)
	im.copyValues.SetChecked(false)
	say(im.status, "", false)
	im.showVars()
	say(im.e.status, "", false)
	im.e.list.Hide()
	im.content.Show()
}

// newRow is found server i: its tick, where it comes from, what it runs,
// and what the import changes or cannot do.
func (im *mcpImport) newRow(i int, f mcpimport.Found) fyne.CanvasObject {
	row := container.NewVBox()
	tick := newFocusCheck(f.Name, func() { scrollToShow(im.scroll, row) })
	tick.OnChanged = func(bool) { im.showVars() }
	im.ticks = append(im.ticks, tick)
	lines := []string{f.Client + " · " + im.shortPath(f.Source)}
	if f.Where != "" {
		lines[0] += " (" + f.Where + ")"
	}
	// A server that cannot be imported may have been read no further
	// than its problem: nothing to say of what it runs.
	if f.Server.Command != "" || f.Server.URL != "" {
		lines = append(lines, importSummary(f.Server))
	}
	for _, n := range f.Needs {
		lines = append(lines, fmt.Sprintf("needs %s: %s", n.Var, n.What))
	}
	lines = append(lines, f.Notes...)
	detail := widget.NewLabel(strings.Join(lines, "\n"))
	detail.Wrapping = fyne.TextWrapWord
	reason := statusLabel()
	if err := f.Check(); err != nil {
		tick.Disable()
		say(reason, "Cannot be added: "+reasons(err), true)
	} else {
		reason.Hide()
	}
	row.Objects = []fyne.CanvasObject{tick, detail, reason, widget.NewSeparator()}
	return row
}

// shortPath writes a path under the home folder as ~/….
func (im *mcpImport) shortPath(p string) string {
	home := im.e.u.deps.Getenv("HOME")
	if rest, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok && home != "" {
		return filepath.Join("~", rest)
	}
	return p
}

// importSummary is what the server runs or where it is: the user has to
// see what they add (a project's file comes from its repository). A URL's
// query is left out, as it may hold a key.
func importSummary(m settings.MCPServer) string {
	if m.Remote() {
		shown := m.URL
		if u, err := url.Parse(m.URL); err == nil && u.Host != "" {
			shown = u.Scheme + "://" + u.Host + u.Path
		}
		return "remote: " + shown
	}
	return "program: " + strings.Join(append([]string{m.Command}, m.Args...), " ")
}

// reasons are err's sentences without the settings key they name, which
// the pane shows by the server instead.
func reasons(err error) string {
	var out []string
	for l := range strings.SplitSeq(err.Error(), "\n") {
		out = append(out, trimKey(l))
	}
	return strings.Join(out, "; ")
}

// picked are the ticked servers and their indexes.
func (im *mcpImport) picked() ([]mcpimport.Found, []int) {
	var fs []mcpimport.Found
	var idx []int
	for i, t := range im.ticks {
		if t.Checked && !t.Disabled() {
			fs = append(fs, im.found[i])
			idx = append(idx, i)
		}
	}
	return fs, idx
}

// showVars says which variables the ticked servers would need.
func (im *mcpImport) showVars() {
	fs, _ := im.picked()
	plan := mcpimport.Plan(fs, im.e.u.deps.Settings.Get().MCPServers, im.copyValues.Checked)
	say(im.vars, varsSentence(plan), false)
}

// varsSentence names the environment variables the servers of plan need,
// with the servers that need each.
func varsSentence(plan []mcpimport.Choice) string {
	by := map[string][]string{}
	for _, c := range plan {
		if c.Refused == nil {
			for _, v := range c.Vars {
				by[v] = append(by[v], c.Name)
			}
		}
	}
	if len(by) == 0 {
		return ""
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", v, strings.Join(by[v], ", ")))
	}
	return "Set these in CodeHydra's environment before it starts: " + strings.Join(parts, ", ") + "."
}

// submit adds the ticked servers that pass the settings' checks, and says
// what became of each.
func (im *mcpImport) submit() {
	fs, idx := im.picked()
	if len(fs) == 0 {
		say(im.status, "Tick the servers to add first.", true)
		return
	}
	var plan []mcpimport.Choice
	err := im.e.u.deps.Settings.Update(func(s *settings.Settings) {
		plan = mcpimport.Plan(fs, s.MCPServers, im.copyValues.Checked)
		for _, c := range plan {
			if c.Refused != nil {
				continue
			}
			if s.MCPServers == nil {
				s.MCPServers = map[string]settings.MCPServer{}
			}
			s.MCPServers[c.Name] = c.Server
		}
	})
	if err != nil {
		say(im.status, "Could not add the servers: "+err.Error(), true)
		return
	}
	var added, refused []string
	for i, c := range plan {
		if c.Refused != nil {
			refused = append(refused, fmt.Sprintf("%s (%s): %s", c.Found.Name, c.Found.Client, reasons(c.Refused)))
			continue
		}
		im.e.u.log.Info("MCP server imported", slog.String("server", c.Name), slog.String("from", c.Found.Client))
		t := im.ticks[idx[i]]
		t.SetChecked(false)
		t.SetText(fmt.Sprintf("%s: added as %s", c.Found.Name, c.Name))
		t.Disable()
		line := c.Name
		if c.Renamed != "" {
			line += " (" + c.Renamed + ")"
		}
		added = append(added, line)
	}
	var msg []string
	if len(added) > 0 {
		msg = append(msg, "Added "+strings.Join(added, ", ")+".")
	}
	if len(refused) > 0 {
		msg = append(msg, "Not added: "+strings.Join(refused, "; "))
	}
	if v := varsSentence(plan); v != "" {
		msg = append(msg, v)
	}
	say(im.status, strings.Join(msg, "\n"), len(added) == 0)
	say(im.vars, "", false)
	im.e.refresh()
}

// close goes back to the list.
func (im *mcpImport) close() {
	im.content.Hide()
	im.e.list.Show()
	im.e.refresh()
}
