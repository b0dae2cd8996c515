package workspace

import (
	"errors"
	"strings"
	"testing"
)

func TestAReplyMustFitItsRequest(t *testing.T) {
	perm := PendingRequest{ID: "per_1", Kind: RequestPermission, Tool: "bash"}
	q := PendingRequest{ID: "que_1", Kind: RequestQuestion, Questions: []PendingQuestion{
		{Text: "Colour?", Options: []string{"red", "blue"}},
		{Text: "Sizes?", Options: []string{"S", "M"}, Multiple: true, Custom: true},
	}}
	tests := []struct {
		name    string
		req     PendingRequest
		reply   Reply
		wantErr string // "" for a valid reply
	}{
		{"allow once", perm, Reply{Permission: AllowOnce}, ""},
		{"allow always", perm, Reply{Permission: AllowAlways}, ""},
		{"reject with a reason", perm, Reply{Permission: RejectOnce, Message: "not now"}, ""},
		{"a permission needs a reply", perm, Reply{}, "must be"},
		{"an unknown permission reply", perm, Reply{Permission: "yes"}, "must be"},
		{"answers to a permission", perm, Reply{Answers: [][]string{{"red"}}}, "not answers"},
		{"a message with an allow", perm, Reply{Permission: AllowOnce, Message: "ok"}, "only with"},
		{"answers to every question", q, Reply{Answers: [][]string{{"red"}, {"S", "my own"}}}, ""},
		{"reject a question", q, Reply{Reject: true}, ""},
		{"too few answers", q, Reply{Answers: [][]string{{"red"}}}, "one answer for each"},
		{"no answers at all", q, Reply{}, "one answer for each"},
		{"an empty answer", q, Reply{Answers: [][]string{{}, {"S"}}}, "is empty"},
		{"two choices where one is allowed", q, Reply{Answers: [][]string{{"red", "blue"}, {"S"}}}, "one choice"},
		{"own words where only options are allowed", q, Reply{Answers: [][]string{{"green"}, {"S"}}}, "only its options"},
		{"a blank choice", q, Reply{Answers: [][]string{{"red"}, {" "}}}, "empty choice"},
		{"reject and answers", q, Reply{Reject: true, Answers: [][]string{{"red"}, {"S"}}}, "not both"},
		{"a permission reply to a question", q, Reply{Permission: AllowOnce}, "not a permission"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.reply.Check(tt.req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidInput || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check = %v, want invalid input saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestASummaryIsOneShortLine(t *testing.T) {
	if got := Summarize("rm -rf\n  build\tnow"); got != "rm -rf build now" {
		t.Errorf("Summarize = %q", got)
	}
	long := Summarize(strings.Repeat("é", 500))
	if n := len([]rune(long)); n != maxSummary || !strings.HasSuffix(long, "…") {
		t.Errorf("a long summary has %d runes (%q…), want %d ending in an ellipsis", n, long[:10], maxSummary)
	}
}
