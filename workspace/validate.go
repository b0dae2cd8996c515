package workspace

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of names, keys and values.
const (
	// MaxNameLength is the longest workspace (branch) name.
	MaxNameLength = 100
	// MaxMetadataKeyLength is the longest metadata key.
	MaxMetadataKeyLength = 64
	// MaxMetadataValueLength is the longest metadata value, in bytes.
	MaxMetadataValueLength = 4096
	// MaxPathLength is the longest path Resolve accepts, in bytes.
	MaxPathLength = 4096
	// maxBaseLength bounds a base given by a caller.
	maxBaseLength = 256
)

var (
	nameRe        = regexp.MustCompile(`^[a-zA-Z0-9][-_./a-zA-Z0-9]*$`)
	metadataKeyRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
)

// ValidateName checks a workspace name, which is also its branch name: it
// matches ^[a-zA-Z0-9][-_./a-zA-Z0-9]*$, has at most MaxNameLength
// characters and is a name `git check-ref-format --branch` accepts (no "..",
// "//", component starting with "." or ending with ".lock", trailing "/" or
// "."). The error is an *Error with CodeInvalidInput.
func ValidateName(name string) error {
	bad := func(why string) error {
		return Errorf(CodeInvalidInput, "workspace name %q is not valid: %s", name, why)
	}
	switch {
	case name == "":
		return Errorf(CodeInvalidInput, "the workspace name is empty; give a branch name such as feature/login")
	case len(name) > MaxNameLength:
		return Errorf(CodeInvalidInput, "the workspace name is %d characters long; use at most %d", len(name), MaxNameLength)
	case !nameRe.MatchString(name):
		return bad("use letters, digits and - _ . /, starting with a letter or digit")
	case strings.Contains(name, ".."):
		return bad(`it must not contain ".."`)
	case strings.Contains(name, "//"):
		return bad(`it must not contain "//"`)
	case strings.HasSuffix(name, "/"), strings.HasSuffix(name, "."):
		return bad(`it must not end with "/" or "."`)
	case name == "HEAD":
		return bad(`"HEAD" is reserved by git`)
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(part, ".") {
			return bad(`no part between slashes may start with "."`)
		}
		if strings.HasSuffix(part, ".lock") {
			return bad(`no part between slashes may end with ".lock"`)
		}
	}
	return nil
}

// ValidateMetadataKey checks a metadata key: ^[A-Za-z][A-Za-z0-9-]*$ and at
// most MaxMetadataKeyLength characters. Keys are case-insensitive (git
// lowercases them); see SetMetadata. The error has CodeInvalidInput.
func ValidateMetadataKey(key string) error {
	switch {
	case key == "":
		return Errorf(CodeInvalidInput, "the metadata key is empty; give a key such as note")
	case len(key) > MaxMetadataKeyLength:
		return Errorf(CodeInvalidInput, "the metadata key is %d characters long; use at most %d", len(key), MaxMetadataKeyLength)
	case !metadataKeyRe.MatchString(key):
		return Errorf(CodeInvalidInput, "metadata key %q is not valid: use letters, digits and -, starting with a letter", key)
	}
	return nil
}

// ValidateMetadataValue checks a metadata value: single-line UTF-8 text (no
// newline, carriage return or NUL) of at most MaxMetadataValueLength bytes.
// The error has CodeInvalidInput.
func ValidateMetadataValue(v string) error {
	switch {
	case len(v) > MaxMetadataValueLength:
		return Errorf(CodeInvalidInput, "the metadata value is %d bytes long; use at most %d", len(v), MaxMetadataValueLength)
	case strings.ContainsAny(v, "\n\r\x00"):
		return Errorf(CodeInvalidInput, "the metadata value must be a single line without NUL characters")
	case !utf8.ValidString(v):
		return Errorf(CodeInvalidInput, "the metadata value must be UTF-8 text")
	}
	return nil
}

// validateBase checks a base given by a caller before it reaches git's
// command line, where a leading "-" would read as an option.
func validateBase(base string) error {
	switch {
	case base == "":
		return Errorf(CodeInvalidInput, "the base is empty; give a branch such as main")
	case len(base) > maxBaseLength:
		return Errorf(CodeInvalidInput, "the base is %d characters long; use at most %d", len(base), maxBaseLength)
	case strings.HasPrefix(base, "-"), strings.ContainsAny(base, "\n\r\x00 \t"):
		return Errorf(CodeInvalidInput, "base %q is not a valid branch or commit; give an existing branch such as main", base)
	}
	return nil
}
