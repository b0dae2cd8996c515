package workspace

import (
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func TestValidateNameAcceptsBranchNamesAndRejectsTheRest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"feature", true},
		{"feature/login", true},
		{"Fix_123-a.b", true},
		{"a./b", true}, // git accepts a component ending in "." when it is not the last
		{"9lives", true},
		{strings.Repeat("a", MaxNameLength), true},
		{strings.Repeat("a", MaxNameLength+1), false},
		{"", false},
		{"-leading-dash", false},
		{".hidden", false},
		{"_under", false},
		{"a..b", false},
		{"a//b", false},
		{"trailing/", false},
		{"trailing.", false},
		{"name.lock", false},
		{"a.lock/b", false},
		{"a/.b", false},
		{"with space", false},
		{"tilde~1", false},
		{"caret^", false},
		{"colon:x", false},
		{"question?", false},
		{"star*", false},
		{"bracket[", false},
		{"back\\slash", false},
		{"at@{x}", false},
		{"percent%", false},
		{"nul\x00", false},
		{"new\nline", false},
		{"ünïcode", false},
		{"HEAD", false},
	}
	for _, tt := range tests {
		err := ValidateName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && CodeOf(err) != CodeInvalidInput {
			t.Errorf("ValidateName(%q) code = %s, want invalid-input", tt.name, CodeOf(err))
		}
		// Every accepted name is one git accepts as a branch name too.
		if tt.ok {
			if _, gerr := testenv.GitErr("", "check-ref-format", "--branch", tt.name); gerr != nil {
				t.Errorf("ValidateName accepts %q but git check-ref-format --branch refuses it: %v", tt.name, gerr)
			}
		}
	}
}

func TestValidateNameRefusesWhatGitRefusesWithinTheAllowedCharacters(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a..b", "a//b", "x/", "x.", "x.lock", "x.lock/y", "x/.y", "HEAD"} {
		if _, err := testenv.GitErr("", "check-ref-format", "--branch", name); err == nil {
			t.Errorf("git accepts %q; the table above is wrong", name)
		}
		if ValidateName(name) == nil {
			t.Errorf("ValidateName accepts %q, which git refuses", name)
		}
	}
}

func TestValidateMetadataKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key string
		ok  bool
	}{
		{"note", true},
		{"base", true},
		{"Foo", true},
		{"a", true},
		{"pr-url", true},
		{"x1-2-3", true},
		{strings.Repeat("k", MaxMetadataKeyLength), true},
		{strings.Repeat("k", MaxMetadataKeyLength+1), false},
		{"", false},
		{"1abc", false},
		{"-abc", false},
		{"a_b", false},
		{"a.b", false},
		{"a b", false},
		{"a/b", false},
		{"ä", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		err := ValidateMetadataKey(tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateMetadataKey(%q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
		if err != nil && CodeOf(err) != CodeInvalidInput {
			t.Errorf("ValidateMetadataKey(%q) code = %s", tt.key, CodeOf(err))
		}
	}
}

func TestValidateMetadataValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
		ok    bool
	}{
		{"empty", "", true},
		{"text", "hello world", true},
		{"leading dash", "-v", true},
		{"unicode", "grüße 🎉", true},
		{"tabs and quotes", "a\t\"b\" 'c' ; # [x]", true},
		{"at limit", strings.Repeat("v", MaxMetadataValueLength), true},
		{"over limit", strings.Repeat("v", MaxMetadataValueLength+1), false},
		{"newline", "a\nb", false},
		{"carriage return", "a\rb", false},
		{"NUL", "a\x00b", false},
		{"invalid UTF-8", "a\xffb", false},
	}
	for _, tt := range tests {
		err := ValidateMetadataValue(tt.value)
		if (err == nil) != tt.ok {
			t.Errorf("%s: ValidateMetadataValue = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && CodeOf(err) != CodeInvalidInput {
			t.Errorf("%s: code = %s", tt.name, CodeOf(err))
		}
	}
}
