// Package sse is the one reader of server-sent event streams
// (text/event-stream) in CodeHydra: an agent's events (package opencode)
// and the answers of CodeHydra's MCP server that mcp-stdio passes on. It
// bounds what one message may hold, so that a stream cannot make its
// reader hold unbounded memory.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrTooLarge reports a message whose data is over the reader's limit.
// The reader skipped it without holding it; reading may go on.
var ErrTooLarge = errors.New("event too large")

// Reader reads the messages of a stream. It follows the rules of the SSE
// format that matter to a reader of data: lines end in \n, \r\n or \r;
// the "data:" lines of one message are joined with \n; a blank line ends
// a message; lines starting with ":" are comments; the other fields
// ("event", "id", "retry") are ignored.
type Reader struct {
	r       *bufio.Reader
	max     int
	data    bytes.Buffer
	hasData bool
	tooBig  bool
	lastCR  bool
}

// NewReader reads messages from r whose data is at most max bytes.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the data of the next message that has a data field (it may
// be empty). A message over the limit is skipped and reported as
// ErrTooLarge once; the caller may go on reading. At the end of the stream
// Next returns io.EOF, or io.ErrUnexpectedEOF with the data read so far
// when the stream ended inside a message; other errors are the stream's.
func (sr *Reader) Next() ([]byte, error) {
	for {
		line, cut, err := sr.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (sr.hasData || sr.tooBig) {
				data := bytes.Clone(sr.data.Bytes())
				sr.reset()
				return data, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(line) == 0 {
			if !sr.hasData && !sr.tooBig {
				continue
			}
			tooBig := sr.tooBig
			data := bytes.Clone(sr.data.Bytes())
			sr.reset()
			if tooBig {
				return nil, ErrTooLarge
			}
			return data, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) != "data" || sr.tooBig {
			continue
		}
		size := sr.data.Len() + len(value)
		if sr.hasData {
			size++ // the \n that joins it to the data before
		}
		if cut || size > sr.max {
			sr.tooBig = true
			sr.data.Reset()
			continue
		}
		if sr.hasData {
			sr.data.WriteByte('\n')
		}
		sr.data.Write(value)
		sr.hasData = true
	}
}

func (sr *Reader) reset() {
	sr.data.Reset()
	sr.hasData = false
	sr.tooBig = false
}

// readLine returns one line without its terminator. A line longer than
// the limit is cut there (cut is set) and the rest of it is discarded
// without being held.
func (sr *Reader) readLine() (line []byte, cut bool, err error) {
	for {
		// A \r\n pair is one terminator: skip the \n after a \r that ended
		// the previous line.
		if sr.lastCR {
			b, err := sr.r.ReadByte()
			if err != nil {
				return nil, false, err
			}
			sr.lastCR = false
			if b != '\n' {
				_ = sr.r.UnreadByte()
			}
			continue
		}
		if sr.r.Buffered() == 0 {
			if _, err := sr.r.Peek(1); err != nil {
				if (len(line) > 0 || cut) && errors.Is(err, io.EOF) {
					return line, cut, nil
				}
				return nil, false, err
			}
		}
		buf, _ := sr.r.Peek(sr.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			line, cut = sr.appendCapped(line, cut, buf)
			_, _ = sr.r.Discard(len(buf))
			continue
		}
		line, cut = sr.appendCapped(line, cut, buf[:i])
		sr.lastCR = buf[i] == '\r'
		_, _ = sr.r.Discard(i + 1)
		return line, cut, nil
	}
}

// appendCapped appends src to a line as far as the line may grow: a
// "data:" field's name, the space after it and the limit.
func (sr *Reader) appendCapped(line []byte, cut bool, src []byte) ([]byte, bool) {
	if room := len("data: ") + sr.max - len(line); len(src) > room {
		return append(line, src[:max(room, 0)]...), true
	}
	return append(line, src...), cut
}
