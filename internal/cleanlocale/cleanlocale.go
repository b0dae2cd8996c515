// Package cleanlocale keeps Fyne from complaining about the C locale.
//
// Fyne reads the locale while its packages initialise and prints "Error
// parsing user locale C" to stderr for every command when LANG is C.UTF-8,
// the default of many containers and CI machines. Imported blank from main,
// this package initialises before Fyne's (packages without a dependency
// between them initialise in import-path order, and "codehydra/…" sorts
// before "fyne.io/…") and names English through LANGUAGE, which the locale
// lookup reads and which gettext ignores under the C locale.
package cleanlocale

import (
	"os"
	"strings"
)

func init() {
	if os.Getenv("LANGUAGE") != "" {
		return
	}
	loc := ""
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if loc = os.Getenv(name); loc != "" {
			break
		}
	}
	if strings.HasPrefix(loc, "C.") || strings.HasPrefix(loc, "POSIX.") {
		os.Setenv("LANGUAGE", "en")
	}
}
