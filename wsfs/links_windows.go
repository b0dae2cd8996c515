package wsfs

import "io/fs"

// hardLinks is 1: os.File.Stat does not say how many names a file has on
// Windows (GetFileInformationByHandle would); see SECURITY.md.
func hardLinks(fs.FileInfo) uint64 { return 1 }
