package wsfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unicode/utf8"

	"codehydra/workspace"
)

// MaxPage is the most bytes one read returns; larger files come in pages.
const MaxPage = 256 << 10

// sniffSize is how much of a file's start is looked at for a NUL, as git
// does to tell binary files from text.
const sniffSize = 8 << 10

// Page is one read of a file: its text from Offset, or Binary without
// text.
type Page struct {
	// Path is the file, relative to the workspace, slash-separated.
	Path string `json:"path" jsonschema:"the file, relative to the workspace"`
	// Size is the whole file's size in bytes.
	Size int64 `json:"size" jsonschema:"size of the whole file in bytes"`
	// Offset is where Content starts, in bytes.
	Offset int64 `json:"offset" jsonschema:"byte offset where content starts"`
	// Content is the text read; empty for a binary file.
	Content string `json:"content" jsonschema:"the text read (UTF-8); empty for a binary file"`
	// NextOffset is where the next page starts; absent at the end.
	NextOffset *int64 `json:"nextOffset,omitempty" jsonschema:"offset of the next page; absent when content reaches the end of the file"`
	// Binary says the file is not text (a NUL in its first 8 KiB, or a
	// page with a NUL or not UTF-8), so no bytes were returned.
	Binary bool `json:"binary,omitempty" jsonschema:"true: the file is not UTF-8 text, no content is returned"`
}

// Read returns up to limit bytes (0 or over MaxPage: MaxPage) of the file
// at p from byte offset, cut back to a whole UTF-8 character. A file whose
// start holds a NUL, or whose page holds a NUL or is not UTF-8, is
// reported Binary.
func (f *FS) Read(p string, offset, limit int64) (Page, error) {
	if offset < 0 || limit < 0 {
		return Page{}, workspace.Errorf(workspace.CodeInvalidInput, "offset and limit must be 0 or more")
	}
	if limit == 0 || limit > MaxPage {
		limit = MaxPage
	}
	// A page of at least one whole character always moves forward.
	limit = max(limit, utf8.UTFMax)
	// Lstat before Open: opening a FIFO would block until a writer came.
	r, root, info, err := f.open(p)
	if err != nil {
		return Page{}, err
	}
	defer root.Close()
	if info.IsDir() {
		return Page{}, workspace.Errorf(workspace.CodeInvalidInput, "%s is a folder: list it with workspace_list_directory", p)
	}
	if !info.Mode().IsRegular() {
		return Page{}, workspace.Errorf(workspace.CodeInvalidInput, "%s is not a regular file (%s)", p, info.Mode().Type())
	}
	beforeOpen(r.rel)
	// Non-blocking, and looked at again once open: a FIFO swapped in since
	// the Lstat must not block the call, and what is read is what was
	// opened.
	file, err := root.OpenFile(r.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Page{}, rootError(p, err)
	}
	defer file.Close()
	if info, err = file.Stat(); err != nil {
		return Page{}, fmt.Errorf("read %s: %w", p, err)
	}
	if !info.Mode().IsRegular() {
		return Page{}, workspace.Errorf(workspace.CodeInvalidInput, "%s is not a regular file (%s)", p, info.Mode().Type())
	}
	if why := ManyNames(info); why != "" {
		return Page{}, workspace.Errorf(workspace.CodeForbidden,
			"%s: %s; it is not read (copy it into a file of its own if you need it)", p, why)
	}
	return readPage(file, r.rel, info.Size(), offset, limit)
}

// beforeOpen runs between Read's Lstat and its open: tests swap the file
// there, as a process of the same user could.
var beforeOpen = func(rel string) {}

func readPage(file io.ReaderAt, rel string, size, offset, limit int64) (Page, error) {
	page := Page{Path: rel, Size: size, Offset: offset}
	head := make([]byte, min(sniffSize, size))
	if _, err := file.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return Page{}, fmt.Errorf("read %s: %w", rel, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		page.Binary = true
		return page, nil
	}
	if offset >= size {
		return page, nil
	}
	buf := make([]byte, min(limit, size-offset))
	n, err := file.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return Page{}, fmt.Errorf("read %s: %w", rel, err)
	}
	buf = buf[:n]
	end := offset + int64(n)
	if end < size {
		buf = cutToRune(buf)
		end = offset + int64(len(buf))
	}
	if offset > 0 && len(buf) > 0 && !utf8.RuneStart(buf[0]) {
		return Page{}, workspace.Errorf(workspace.CodeInvalidInput, "offset %d is inside a character: start at 0 or at a nextOffset", offset)
	}
	if bytes.IndexByte(buf, 0) >= 0 || !utf8.Valid(buf) {
		return Page{Path: rel, Size: size, Offset: offset, Binary: true}, nil
	}
	page.Content = string(buf)
	if end < size {
		page.NextOffset = &end
	}
	return page, nil
}

// cutToRune drops a UTF-8 character cut at the end of b, so that the next
// page starts on a character.
func cutToRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
