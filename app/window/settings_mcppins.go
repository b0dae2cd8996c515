package window

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// pinReview is the MCP servers tab's view of one server's tools whose
// definitions changed since they were pinned (settings pinTools): per
// tool, the pinned definition against the server's new one as a diff,
// and Accept, which pins the new one and offers the tool again.
type pinReview struct {
	e       *mcpServersEditor
	server  string
	title   *widget.Label
	tools   *fyne.Container
	status  *widget.Label
	back    *widget.Button
	content fyne.CanvasObject
	// accept and diffs are the shown tools' Accept buttons and diffs, by
	// tool.
	accept map[string]*widget.Button
	diffs  map[string]*diffView
}

func newPinReview(e *mcpServersEditor) *pinReview {
	r := &pinReview{e: e, tools: container.NewVBox(), status: statusLabel(),
		accept: map[string]*widget.Button{}, diffs: map[string]*diffView{}}
	r.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	intro := widget.NewLabel("These tools changed their definitions since CodeHydra first saw them, so agents no longer see them. " +
		"Read what changed (red: the definition you had, green: the new one); Accept offers the tool again as it is now.")
	intro.Wrapping = fyne.TextWrapWord
	r.back = widget.NewButton("Back", r.close)
	r.content = container.NewBorder(container.NewVBox(r.title, intro),
		container.NewVBox(r.status, container.NewHBox(layout.NewSpacer(), r.back)), nil, nil,
		container.NewScroll(r.tools))
	r.content.Hide()
	return r
}

// open shows the changed tools of server in place of the list.
func (r *pinReview) open(server string) {
	r.server = server
	r.title.SetText("Changed tool definitions of " + server)
	say(r.status, "", false)
	r.show(r.e.u.deps.Gateway.ToolChanges(server))
	r.e.list.Hide()
	r.content.Show()
}

// close goes back to the list.
func (r *pinReview) close() {
	r.content.Hide()
	r.e.list.Show()
	r.e.refresh()
}

// show lists changes, each with its diff and Accept.
func (r *pinReview) show(changes []MCPToolChange) {
	r.tools.RemoveAll()
	clear(r.accept)
	clear(r.diffs)
	if len(changes) == 0 {
		r.tools.Add(widget.NewLabel("No tool of " + r.server + " is withheld any more."))
	}
	for _, c := range changes {
		v := newDiffView()
		// Its whole height: the view scrolls as one, both ways, as a
		// schema's line may be wider than the window.
		v.Scroll = fyne.ScrollNone
		v.setLines(definitionDiff(c.Old, c.New))
		accept := widget.NewButton("Accept", func() { r.acceptChange(c) })
		accept.Importance = widget.HighImportance
		if c.Hash == "" {
			// The gateway could not read the new definition: nothing to
			// accept.
			accept.Disable()
		}
		r.accept[c.Tool], r.diffs[c.Tool] = accept, v
		head := container.NewBorder(nil, nil, nil, accept,
			widget.NewLabelWithStyle("Tool "+c.Tool+" ("+r.server+"__"+c.Tool+")", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		r.tools.Add(container.NewVBox(head, v, widget.NewSeparator()))
	}
}

// acceptChange pins c's new definition, the one shown, and shows what is
// left to review.
func (r *pinReview) acceptChange(c MCPToolChange) {
	err := r.e.u.deps.Gateway.AcceptToolChange(r.server, c.Tool, c.Hash)
	r.show(r.e.u.deps.Gateway.ToolChanges(r.server))
	if err != nil {
		say(r.status, "Not accepted: "+err.Error(), true)
		return
	}
	r.e.u.log.Info("changed MCP tool definition accepted", slog.String("server", r.server), slog.String("tool", c.Tool))
	say(r.status, "Accepted the new definition of "+c.Tool+": agents see the tool again.", false)
}

// definitionWrap is where a description's long lines wrap in the diff.
const definitionWrap = 72

// definitionLines is a tool definition (the JSON of its name,
// description, inputSchema and annotations) as lines to compare: the
// description line by line, wrapped, and the schema and annotations
// indented, so that a diff points at what changed.
func definitionLines(def string) []string {
	var parts map[string]json.RawMessage
	if json.Unmarshal([]byte(def), &parts) != nil {
		return strings.Split(def, "\n")
	}
	var name, desc string
	_ = json.Unmarshal(parts["name"], &name)
	_ = json.Unmarshal(parts["description"], &desc)
	out := []string{"name: " + name, "description:"}
	for _, l := range strings.Split(desc, "\n") {
		for _, w := range wrapLine(l, definitionWrap) {
			out = append(out, "  "+w)
		}
	}
	for _, key := range []string{"inputSchema", "annotations"} {
		var b bytes.Buffer
		if raw := parts[key]; len(raw) == 0 || string(raw) == "null" || json.Indent(&b, raw, "", "  ") != nil {
			out = append(out, key+": none")
			continue
		}
		out = append(out, key+":")
		for _, l := range strings.Split(b.String(), "\n") {
			out = append(out, "  "+l)
		}
	}
	return out
}

// wrapLine cuts l at spaces into lines of at most width runes (a word
// longer than width is cut).
func wrapLine(l string, width int) []string {
	var out []string
	for r := []rune(l); ; {
		if len(r) <= width {
			return append(out, string(r))
		}
		cut := width
		if i := strings.LastIndex(string(r[:width+1]), " "); i > 0 {
			cut = len([]rune(string(r[:width+1])[:i]))
		}
		out = append(out, string(r[:cut]))
		r = []rune(strings.TrimLeft(string(r[cut:]), " "))
	}
}

// maxDiffCells bounds the table of the line diff; past it the two
// definitions are shown one after the other, all removed then all added.
const maxDiffCells = 4 << 20

// definitionDiff is the old definition against the new one, line by line
// (a longest common subsequence), as the diff view shows a patch.
func definitionDiff(oldDef, newDef string) []diffLine {
	a, b := definitionLines(oldDef), definitionLines(newDef)
	out := []diffLine{{Kind: 'h', Text: "--- as pinned (the definition you had)"}, {Kind: 'h', Text: "+++ as the server gives it now"}}
	n, m := len(a), len(b)
	// common[i][j] is the length of the longest common subsequence of
	// a[i:] and b[j:].
	big := (n+1)*(m+1) > maxDiffCells
	common := make([][]int32, n+1)
	if !big {
		for i := range common {
			common[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[i] == b[j] {
					common[i][j] = common[i+1][j+1] + 1
				} else {
					common[i][j] = max(common[i+1][j], common[i][j+1])
				}
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i == n:
			out = append(out, diffLine{Kind: '+', Text: b[j], Line: j + 1})
			j++
		case j == m || big || a[i] != b[j] && common[i+1][j] >= common[i][j+1]:
			out = append(out, diffLine{Kind: '-', Text: a[i]})
			i++
		case a[i] == b[j]:
			out = append(out, diffLine{Kind: ' ', Text: a[i], Line: j + 1})
			i, j = i+1, j+1
		default:
			out = append(out, diffLine{Kind: '+', Text: b[j], Line: j + 1})
			j++
		}
	}
	return out
}
