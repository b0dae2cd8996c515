package testenv

import "syscall"

// underWine: wine's ntdll exports wine_get_version; Windows' does not.
var underWine = syscall.NewLazyDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
