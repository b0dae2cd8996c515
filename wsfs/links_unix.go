//go:build unix

package wsfs

import (
	"io/fs"
	"syscall"
)

// hardLinks is how many names the file of info has (1 when unknown).
func hardLinks(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
