package window

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"github.com/google/jsonschema-go/jsonschema"

	"codehydra/app/internal/uitest"
)

// everythingSchema is what server-everything's trigger-elicitation-request
// asks for: every kind of field of the spec's schema subset.
const everythingSchema = `{"type":"object","required":["name"],"properties":{
 "name":{"title":"String","type":"string","description":"Your full, legal name"},
 "check":{"title":"Boolean","type":"boolean"},
 "firstLine":{"type":"string","default":"It was a dark and stormy night."},
 "email":{"type":"string","format":"email"},
 "integer":{"type":"integer","minimum":1,"maximum":100,"default":42},
 "number":{"type":"number","minimum":0,"maximum":1000,"default":3.14},
 "untitledSingleSelectEnum":{"type":"string","enum":["Monica","Rachel","Joey"],"default":"Monica"},
 "untitledMultipleSelectEnum":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["Guitar","Piano","Violin"]},"default":["Guitar"]},
 "titledSingleSelectEnum":{"type":"string","oneOf":[{"const":"hero-1","title":"Superman"},{"const":"hero-2","title":"Green Lantern"}],"default":"hero-1"},
 "titledMultipleSelectEnum":{"type":"array","minItems":1,"items":{"anyOf":[{"const":"fish-1","title":"Tuna"},{"const":"fish-2","title":"Salmon"}]},"default":["fish-1"]},
 "legacyTitledEnum":{"type":"string","enum":["pet-1","pet-2"],"enumNames":["Cats","Dogs"],"default":"pet-1"}}}`

// openQuestion opens a KindElicit window for schema and returns it and
// the answers it gives.
func openQuestion(h *harness, schema string, deadline time.Time) (*elicitWindow, *[]Answer) {
	var answers []Answer
	e := h.u.elicit(Spec{Kind: KindElicit, Seq: 1, Question: &Question{Server: "every", Workspace: "/w/feat",
		Message: "Please provide inputs", Schema: json.RawMessage(schema), Deadline: deadline},
		Elicited: func(a Answer) { answers = append(answers, a) }})
	return e, &answers
}

func TestAQuestionsFormIsBuiltFromItsSchemaAndAcceptsOnlyWhatFits(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	e, answers := openQuestion(h, everythingSchema, time.Time{})
	texts := h.app.Texts("CodeHydra: every asks")
	for _, want := range []string{`"every"`, "/w/feat", "Please provide inputs", "String *", "Your full, legal name", "not CodeHydra's"} {
		if !strings.Contains(texts, want) {
			t.Errorf("the window does not show %q:\n%s", want, texts)
		}
	}
	if len(e.form.fields) != 11 {
		t.Fatalf("%d fields, want one per property (11)", len(e.form.fields))
	}

	e.accept.OnTapped()
	if len(*answers) != 0 || !strings.Contains(e.status.Text, "name is required") {
		t.Fatalf("Accept without the required name: answers %+v, status %q", *answers, e.status.Text)
	}
	entries := map[string]*entry{}
	for _, f := range e.form.fields {
		entries[f.name] = f.entry
	}
	test.Type(entries["name"], "Ada Lovelace")
	test.Type(entries["email"], "not an address")
	e.accept.OnTapped()
	if len(*answers) != 0 || !strings.Contains(e.status.Text, "email") {
		t.Fatalf("Accept with a bad email: answers %+v, status %q", *answers, e.status.Text)
	}
	entries["email"].SetText("ada@example.com")
	entries["integer"].SetText("101")
	e.accept.OnTapped()
	if len(*answers) != 0 || !strings.Contains(e.status.Text, "integer") {
		t.Fatalf("Accept with 101 (maximum 100): answers %+v, status %q", *answers, e.status.Text)
	}
	entries["integer"].SetText("7")
	e.accept.OnTapped()
	if len(*answers) != 1 || (*answers)[0].Action != "accept" {
		t.Fatalf("answers %+v, want one accept", *answers)
	}
	c := (*answers)[0].Content
	if c["name"] != "Ada Lovelace" || c["integer"] != int64(7) || c["titledSingleSelectEnum"] != "hero-1" || c["legacyTitledEnum"] != "pet-1" {
		t.Errorf("content %+v, want what was typed and the defaults", c)
	}
	// What the window accepts is what the go-sdk checks the answer against.
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(everythingSchema), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(c)
	var wire map[string]any
	_ = json.Unmarshal(data, &wire)
	if err := rs.Validate(wire); err != nil {
		t.Errorf("the accepted content does not fit the schema: %v", err)
	}
	if h.windowOpen("CodeHydra: every asks") {
		t.Error("the window stays open after Accept")
	}
}

func TestAQuestionIsDeclinedOrCancelledByItsButtonsEscapeClosingAndItsDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(h *harness, e *elicitWindow)
		want string
	}{
		{"decline", func(_ *harness, e *elicitWindow) { e.decline.OnTapped() }, "decline"},
		{"cancel", func(_ *harness, e *elicitWindow) { e.cancel.OnTapped() }, "cancel"},
		{"escape", func(_ *harness, e *elicitWindow) { uitest.PressEscape(e.win) }, "cancel"},
		{"close", func(_ *harness, e *elicitWindow) { e.win.Close() }, "cancel"},
		{"deadline", func(h *harness, e *elicitWindow) {
			h.waitFor("the deadline", func() bool { return !h.windowOpen("CodeHydra: every asks") })
		}, "cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
			deadline := time.Now().Add(time.Hour)
			if tc.name == "deadline" {
				deadline = time.Now().Add(200 * time.Millisecond)
			}
			e, answers := openQuestion(h, everythingSchema, deadline)
			tc.act(h, e)
			if len(*answers) != 1 || (*answers)[0].Action != tc.want || (*answers)[0].Content != nil {
				t.Fatalf("answers %+v, want one %s", *answers, tc.want)
			}
			if h.windowOpen("CodeHydra: every asks") {
				t.Error("the window stays open")
			}
		})
	}
}

func TestAQuestionWhoseSchemaCannotBeShownCanOnlyBeDeclinedOrCancelled(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	e, _ := openQuestion(h, `{"type":"object","properties":{"where":{"type":"object"}}}`, time.Time{})
	if !e.accept.Disabled() || !strings.Contains(e.status.Text, "cannot show") {
		t.Fatalf("accept disabled %v, status %q", e.accept.Disabled(), e.status.Text)
	}
}

// TestAQuestionWindowRenders draws the window of server-everything's
// question, with a mistake shown (see shot for where it is saved).
func TestAQuestionWindowRenders(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	h.app.Settings().SetTheme(theme.DefaultTheme())
	e, _ := openQuestion(h, everythingSchema, time.Now().Add(time.Hour))
	for _, f := range e.form.fields {
		if f.name == "email" {
			test.Type(f.entry, "ada@")
		}
	}
	e.accept.OnTapped()
	shot(t, e.win, "elicit.png")
}

func TestAQuestionsFormScrollsTheFocusedInputIntoSight(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	e, _ := openQuestion(h, everythingSchema, time.Time{})
	if !e.status.Hidden {
		t.Error("the empty status line takes a row under the form")
	}
	c := e.win.Canvas()
	// To the last input: each choice of a multiple choice is an input
	// of its own (3 and 2 of them, in place of 2 fields).
	for range len(e.form.fields) + 3 {
		c.FocusNext()
	}
	last := e.form.box.Objects[len(e.form.box.Objects)-1]
	s := e.form.scroll
	if top := last.Position().Y - s.Offset.Y; s.Offset.Y == 0 || top < 0 || top+last.Size().Height > s.Size().Height+1 {
		t.Fatalf("the last field (%v tall at %v) is not in sight: the scroll (%v tall) is at %v", last.Size().Height, last.Position().Y, s.Size().Height, s.Offset.Y)
	}
	for range 4 { // Cancel, Decline, Accept, and the first input again
		c.FocusNext()
	}
	if s.Offset.Y != 0 {
		t.Errorf("the first field is not in sight again: the scroll is at %v", s.Offset.Y)
	}
}
