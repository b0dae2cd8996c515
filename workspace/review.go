package workspace

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A review of a workspace's changes (issue 23): comments on files and
// lines plus a summary, handed to the workspace's agent as one prompt.

// ReviewComment is a comment on a file, or on lines of it.
type ReviewComment struct {
	// File is a path relative to the workspace, as Diff.Files names it.
	File string `json:"file"`
	// Line and EndLine are the lines (from 1, of the file in the
	// workspace) the comment is about; 0 for the whole file. EndLine 0
	// means Line alone.
	Line    int    `json:"line,omitempty"`
	EndLine int    `json:"endLine,omitempty"`
	Text    string `json:"text"`
}

// Review is what a reviewer sends to a workspace's agent.
type Review struct {
	Summary  string          `json:"summary,omitempty"`
	Comments []ReviewComment `json:"comments,omitempty"`
	// From says who reviews: "user", or the path of the parent workspace
	// whose agent sent it. Set by CodeHydra, not by the reviewer.
	From string `json:"from,omitempty"`
}

// ReviewDelivery is what became of one review sent to an agent: delivered
// exactly once, as a first prompt is.
type ReviewDelivery struct {
	ID        string        `json:"id"`
	State     DeliveryState `json:"state"`
	SessionID string        `json:"sessionId,omitempty"`
	Error     string        `json:"error,omitempty"`
	From      string        `json:"from,omitempty"`
	Comments  int           `json:"comments"`
	Sent      time.Time     `json:"sent"`
}

// ReviewFromUser is Review.From for the user's reviews.
const ReviewFromUser = "user"

// The bounds of a review: its text (the summary, and each comment's file
// and text) in bytes, as much as a first prompt, and its comments.
const (
	MaxReviewBytes    = MaxFirstPrompt
	MaxReviewComments = 200
	// MaxReviewFile bounds the path of a commented file.
	MaxReviewFile = 4096
)

// CheckReview says, as a CodeInvalidInput error, what makes r unfit to be
// sent to an agent; nil if nothing does. workspace_send_review and the
// Review window both check with it (and the supervisor again), so that
// both take the same reviews.
func CheckReview(r Review) error {
	if strings.TrimSpace(r.Summary) == "" && len(r.Comments) == 0 {
		return Errorf(CodeInvalidInput, "the review is empty; give a summary or at least one comment")
	}
	if len(r.Comments) > MaxReviewComments {
		return Errorf(CodeInvalidInput, "the review has %d comments, more than the %d allowed; group them, or send two reviews", len(r.Comments), MaxReviewComments)
	}
	size := len(r.Summary)
	for i, c := range r.Comments {
		if err := checkComment(c); err != nil {
			return Errorf(CodeInvalidInput, "comment %d: %s", i+1, err)
		}
		size += len(c.File) + len(c.Text)
	}
	if size > MaxReviewBytes {
		return Errorf(CodeInvalidInput, "the review has %d bytes of text, more than the %d allowed; be shorter, or send two reviews", size, MaxReviewBytes)
	}
	return nil
}

// checkComment says what is wrong with one comment.
func checkComment(c ReviewComment) error {
	switch {
	case strings.TrimSpace(c.Text) == "":
		return fmt.Errorf("the text is empty; say what should change")
	case c.File == "":
		return fmt.Errorf("the file is missing; name it as workspace_get_diff lists it")
	case len(c.File) > MaxReviewFile:
		return fmt.Errorf("the file's path has %d bytes, more than the %d allowed", len(c.File), MaxReviewFile)
	case !cleanRelative(c.File):
		return fmt.Errorf("the file %q is not a clean path relative to the workspace (as workspace_get_diff lists it, e.g. src/main.go)", c.File)
	case c.Line < 0 || c.EndLine < 0:
		return fmt.Errorf("lines count from 1 (0 or none for the whole file), not %d", min(c.Line, c.EndLine))
	case c.EndLine != 0 && c.Line == 0:
		return fmt.Errorf("endLine %d without a line; give line, where the range starts", c.EndLine)
	case c.EndLine != 0 && c.EndLine < c.Line:
		return fmt.Errorf("endLine %d is before line %d", c.EndLine, c.Line)
	}
	return nil
}

// cleanRelative reports whether f is a path inside the workspace in git's
// form: relative, with "/", cleaned, and without control characters,
// which would let it break the lines of the prompt.
func cleanRelative(f string) bool {
	if path.Clean(f) != f || path.IsAbs(f) || filepath.IsAbs(f) || filepath.VolumeName(f) != "" ||
		f == "." || f == ".." || strings.HasPrefix(f, "../") || strings.Contains(f, `\`) {
		return false
	}
	return !strings.ContainsFunc(f, unicode.IsControl) && !strings.ContainsFunc(f, isLineBreak)
}

// isLineBreak is a character that a reader may take for a line break.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// Prompt is the one prompt the agent is given for r: who reviewed, the
// summary, then the comments grouped by file (in the order the files come
// first), each file's comments by line, the whole-file ones first. All
// that the reviewer wrote is quoted, each line behind "> ", and file
// names are clean paths (CheckReview), so no text of the reviewer's can
// pass for the prompt's own headings or locations.
func (r Review) Prompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Review of the changes in this workspace, from %s.\n\n", reviewer(r.From))
	b.WriteString("Act on it: make each change a comment asks for, answer each question it asks, and where you " +
		"disagree, say why instead. Then commit your work and reply with what you did for each comment.\n" +
		"The reviewer's words are quoted below, each line after \"> \"; what is not quoted (the headings and " +
		"the file:line locations) is CodeHydra's.\n")
	if strings.TrimSpace(r.Summary) != "" {
		b.WriteString("\n## Summary\n\n")
		quote(&b, r.Summary)
	}
	files := commentsByFile(r.Comments)
	if len(files) > 0 {
		fmt.Fprintf(&b, "\n## Comments (%d, on %d %s)\n", len(r.Comments), len(files), plural(len(files), "file", "files"))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "\n### %s\n", f[0].File)
		for _, c := range f {
			fmt.Fprintf(&b, "\n%s\n", location(c))
			quote(&b, c.Text)
		}
	}
	return b.String()
}

// reviewer names the reviewer of From.
func reviewer(from string) string {
	switch {
	case from == ReviewFromUser:
		return "the user"
	case from == "":
		return "a reviewer"
	}
	return "the agent of the workspace " + strconv.Quote(from) + ", which created this one"
}

// commentsByFile groups the comments by file, the files in the order
// they come first, each file's comments by line (the whole file first),
// in their order otherwise.
func commentsByFile(cs []ReviewComment) [][]ReviewComment {
	var files [][]ReviewComment
	at := map[string]int{}
	for _, c := range cs {
		i, ok := at[c.File]
		if !ok {
			i = len(files)
			at[c.File] = i
			files = append(files, nil)
		}
		files[i] = append(files[i], c)
	}
	for _, f := range files {
		slices.SortStableFunc(f, func(a, b ReviewComment) int { return a.Line - b.Line })
	}
	return files
}

// location is where a comment points: "src/a.go:12-14", "src/a.go:12",
// or the whole file.
func location(c ReviewComment) string {
	switch {
	case c.Line == 0:
		return c.File + " (the whole file)"
	case c.EndLine > c.Line:
		return fmt.Sprintf("%s:%d-%d", c.File, c.Line, c.EndLine)
	}
	return fmt.Sprintf("%s:%d", c.File, c.Line)
}

// quote writes text with every line behind "> ", whatever a reader may
// take for a line break ("\r\n", "\r", "\v", "\f", the file, group
// and record separators, Unicode's line separators).
func quote(b *strings.Builder, text string) {
	text = strings.ReplaceAll(strings.TrimSpace(text), "\r\n", "\n")
	line := func(l string) {
		b.WriteString(strings.TrimRight("> "+l, " "))
		b.WriteString("\n")
	}
	start := 0
	for i, r := range text {
		if isLineBreak(r) {
			line(text[start:i])
			start = i + utf8.RuneLen(r)
		}
	}
	line(text[start:])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
