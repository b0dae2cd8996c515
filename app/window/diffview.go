package window

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// diffLine is one line of a unified patch as the Review window shows it.
type diffLine struct {
	// Kind is the line's first character in a hunk ('+', '-', ' ', '\\'),
	// '@' for a hunk's header, 'h' for the file headers before it.
	Kind byte
	Text string
	// Line is the line of the file in the workspace that the line is at
	// (from 1): the line itself when it was added or kept, the line that
	// now follows where it was removed; 0 for the headers.
	Line int
}

// patchParser turns the pages of a patch into diffLines, keeping the
// numbering across pages: a page may end in the middle of a line.
type patchParser struct {
	tail string // the start of a line the last page cut
	// inHunk is true between a hunk's header and its last line; newLine
	// is the workspace's line the next added or kept line is, and
	// oldLeft and newLeft count the hunk's lines still to come.
	inHunk           bool
	newLine          int
	oldLeft, newLeft int
}

// add parses a page; last says that no page follows, so a line the page
// does not end is whole.
func (p *patchParser) add(page string, last bool) []diffLine {
	text := p.tail + page
	p.tail = ""
	if !last {
		if i := strings.LastIndexByte(text, '\n'); i < len(text)-1 {
			text, p.tail = text[:i+1], text[i+1:]
		}
	}
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	raw := strings.Split(text, "\n")
	out := make([]diffLine, 0, len(raw))
	for _, l := range raw {
		out = append(out, p.line(l))
	}
	return out
}

// line parses one line of the patch.
func (p *patchParser) line(l string) diffLine {
	if !p.inHunk || (p.oldLeft <= 0 && p.newLeft <= 0 && !strings.HasPrefix(l, `\`)) {
		p.inHunk = false
		if start, oldN, newN, ok := hunkHeader(l); ok {
			p.inHunk, p.newLine, p.oldLeft, p.newLeft = true, start, oldN, newN
			return diffLine{Kind: '@', Text: l}
		}
		return diffLine{Kind: 'h', Text: l}
	}
	d := diffLine{Kind: ' ', Text: l, Line: p.newLine}
	if l != "" {
		d.Kind, d.Text = l[0], l[1:]
	}
	switch d.Kind {
	case '+':
		p.newLine++
		p.newLeft--
	case '-':
		p.oldLeft--
	case '\\':
		d.Line = 0
	default:
		d.Kind = ' '
		p.newLine++
		p.oldLeft--
		p.newLeft--
	}
	return d
}

// hunkHeader parses "@@ -a,b +c,d @@…": the new side's first line c and
// the hunk's old and new line counts (1 when omitted).
func hunkHeader(l string) (start, oldN, newN int, ok bool) {
	if !strings.HasPrefix(l, "@@ -") {
		return 0, 0, 0, false
	}
	fields := strings.Fields(l)
	if len(fields) < 4 || fields[3] != "@@" || !strings.HasPrefix(fields[2], "+") {
		return 0, 0, 0, false
	}
	_, oldN, ok1 := hunkRange(fields[1][1:])
	start, newN, ok2 := hunkRange(fields[2][1:])
	return start, oldN, newN, ok1 && ok2
}

// hunkRange parses "a,b" or "a" (b is then 1).
func hunkRange(s string) (start, n int, ok bool) {
	a, b, found := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	n = 1
	if found {
		if n, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return start, n, true
}

// gutterWidth is the width of the line numbers before each line.
const gutterWidth = 6

// rowText is how a diff line reads in the view: the workspace's line
// number (blank for headers and removed lines), the mark, the text.
func (d diffLine) rowText() string {
	num := ""
	if d.Line > 0 && d.Kind != '-' {
		num = strconv.Itoa(d.Line)
	}
	switch d.Kind {
	case 'h', '@':
		return fmt.Sprintf("%*s %s", gutterWidth-1, "", d.Text)
	}
	return fmt.Sprintf("%*s %c%s", gutterWidth-1, num, d.Kind, d.Text)
}

// diffView shows a patch in a monospace, read-only grid; a tap on a line
// picks it (onPick gets its index).
type diffView struct {
	widget.TextGrid
	lines    []diffLine
	selected int
	onPick   func(i int)
}

func newDiffView() *diffView {
	v := &diffView{selected: -1}
	v.ExtendBaseWidget(v)
	return v
}

// setLines shows lines, none picked.
func (v *diffView) setLines(lines []diffLine) {
	v.lines, v.selected = nil, -1
	v.Rows = nil
	v.appendLines(lines)
}

// appendLines adds lines at the end (the next page of the patch).
func (v *diffView) appendLines(lines []diffLine) {
	for _, l := range lines {
		v.lines = append(v.lines, l)
		v.Rows = append(v.Rows, widget.TextGridRow{Cells: cells(l.rowText()), Style: lineStyle(l.Kind, false)})
	}
	v.Refresh()
}

// pick marks line i as chosen and tells onPick.
func (v *diffView) pick(i int) {
	if i < 0 || i >= len(v.lines) {
		return
	}
	if v.selected >= 0 && v.selected < len(v.Rows) {
		v.Rows[v.selected].Style = lineStyle(v.lines[v.selected].Kind, false)
	}
	v.selected = i
	v.Rows[i].Style = lineStyle(v.lines[i].Kind, true)
	v.Refresh()
	if v.onPick != nil {
		v.onPick(i)
	}
}

// Tapped picks the line under the pointer.
func (v *diffView) Tapped(ev *fyne.PointEvent) {
	row, _ := v.CursorLocationForPosition(ev.Position)
	v.pick(row)
}

func cells(s string) []widget.TextGridCell {
	out := make([]widget.TextGridCell, 0, len(s))
	for _, r := range s {
		out = append(out, widget.TextGridCell{Rune: r})
	}
	return out
}

// lineStyle colours a line by its kind: added green, removed red, hunk
// headers in the primary colour, file headers bold; a picked line has the
// selection's background.
func lineStyle(kind byte, picked bool) widget.TextGridStyle {
	s := &widget.CustomTextGridStyle{}
	switch kind {
	case '+':
		s.FGColor = themeColor(theme.ColorNameSuccess)
	case '-':
		s.FGColor = themeColor(theme.ColorNameError)
	case '@':
		s.FGColor = themeColor(theme.ColorNamePrimary)
	case 'h':
		s.TextStyle = fyne.TextStyle{Bold: true, Monospace: true}
	}
	if picked {
		s.BGColor = themeColor(theme.ColorNameSelection)
	}
	return s
}

func themeColor(name fyne.ThemeColorName) color.Color { return theme.Color(name) }
