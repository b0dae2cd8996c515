package settings

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// abs is the Unix absolute path p as an absolute path of this system: the
// same on Unix, on drive C: on Windows, where "/p" has no drive and is not
// absolute.
func abs(p string) string {
	if runtime.GOOS == "windows" {
		return `C:` + filepath.FromSlash(p)
	}
	return p
}

// absJSON is the settings JSON s with each string in it that is a Unix
// absolute path (a JSON string that starts with /) rewritten by abs.
func absJSON(s string) string {
	return unixPathString.ReplaceAllStringFunc(s, func(q string) string {
		return `"` + strings.ReplaceAll(abs(q[1:len(q)-1]), `\`, `\\`) + `"`
	})
}

var unixPathString = regexp.MustCompile(`"/[^"\\]*"`)
