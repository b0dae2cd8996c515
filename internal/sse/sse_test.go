package sse

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// message is what Next returned once: data, or an error's text.
type message struct {
	data string
	err  error
}

func (m message) String() string {
	if m.err != nil {
		return fmt.Sprintf("%q (%v)", m.data, m.err)
	}
	return fmt.Sprintf("%q", m.data)
}

// readAll reads every message of stream with the limit max.
func readAll(t *testing.T, stream string, max int) []message {
	t.Helper()
	sr := NewReader(strings.NewReader(stream), max)
	var got []message
	for i := 0; i <= len(stream)+1; i++ {
		data, err := sr.Next()
		got = append(got, message{string(data), err})
		if err != nil && !errors.Is(err, ErrTooLarge) {
			return got
		}
	}
	t.Fatal("the reader returned more messages than the stream has bytes")
	return nil
}

func TestReaderReadsStreams(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		max    int
		want   []message
	}{
		{
			name:   "the MCP SDK's framing",
			stream: "event: message\nid: 1_0\ndata: {\"a\":1}\n\nevent: message\nid: 1_1\ndata: {\"b\":2}\n\n",
			want:   []message{{data: `{"a":1}`}, {data: `{"b":2}`}, {err: io.EOF}},
		},
		{
			name:   "CRLF and bare CR line ends",
			stream: "data: a\r\n\r\nevent: message\rdata: b\r\rdata: c\n\n",
			want:   []message{{data: "a"}, {data: "b"}, {data: "c"}, {err: io.EOF}},
		},
		{
			name:   "a CR at a buffer's end and its LF after it are one line end",
			stream: "data: " + strings.Repeat("x", 64<<10-len("data: ")) + "\r\n\r\ndata: y\n\n",
			max:    1 << 20,
			want:   []message{{data: strings.Repeat("x", 64<<10-len("data: "))}, {data: "y"}, {err: io.EOF}},
		},
		{
			name:   "data over lines, comments, other fields, no space after the colon",
			stream: ": keep-alive\nevent: message\nid: 7\nretry: 1000\ndata:one\ndata:  two\ndata\n\n",
			want:   []message{{data: "one\n two\n"}, {err: io.EOF}},
		},
		{
			name:   "blank lines and messages without data are not messages",
			stream: "\n\n\nevent: ping\n\ndata: a\n\n\n\n",
			want:   []message{{data: "a"}, {err: io.EOF}},
		},
		{
			name:   "an empty data field is a message",
			stream: "data:\n\n",
			want:   []message{{data: ""}, {err: io.EOF}},
		},
		{
			name:   "a stream cut inside a message gives what it read",
			stream: "data: a\n\ndata: b",
			want:   []message{{data: "a"}, {data: "b", err: io.ErrUnexpectedEOF}},
		},
		{
			name:   "empty stream",
			stream: "",
			want:   []message{{err: io.EOF}},
		},
		{
			name:   "data of exactly the limit",
			stream: "data: 12345\n\n",
			max:    5,
			want:   []message{{data: "12345"}, {err: io.EOF}},
		},
		{
			name:   "one line over the limit is skipped, not cut short",
			stream: "data: 123456\n\ndata: after\n\n",
			max:    5,
			want:   []message{{err: ErrTooLarge}, {data: "after"}, {err: io.EOF}},
		},
		{
			name:   "lines that together are over the limit",
			stream: "data: 123\ndata: 45\n\ndata: ok\n\n",
			max:    5,
			want:   []message{{err: ErrTooLarge}, {data: "ok"}, {err: io.EOF}},
		},
		{
			name:   "a long line of another field does not count",
			stream: ": " + strings.Repeat("c", 100) + "\nevent: " + strings.Repeat("e", 100) + "\ndata: ok\n\n",
			max:    5,
			want:   []message{{data: "ok"}, {err: io.EOF}},
		},
		{
			name:   "too large a message cut by the end of the stream",
			stream: "data: 123456",
			max:    5,
			want:   []message{{err: io.ErrUnexpectedEOF}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 1 << 10
			}
			got := readAll(t, tt.stream, max)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages %v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i].data != tt.want[i].data || !errors.Is(got[i].err, tt.want[i].err) || (got[i].err == nil) != (tt.want[i].err == nil) {
					t.Errorf("message %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// reference parses a whole stream the plain way, without a limit: what
// Reader must agree with, but for messages over its limit.
func reference(stream string) (msgs []string, tail *string) {
	stream = strings.ReplaceAll(stream, "\r\n", "\n")
	stream = strings.ReplaceAll(stream, "\r", "\n")
	lines := strings.Split(stream, "\n")
	last := lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	if last != "" {
		lines = append(lines, last)
	}
	var data []string
	for _, line := range lines {
		if line == "" {
			if data != nil {
				msgs = append(msgs, strings.Join(data, "\n"))
			}
			data = nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		if field == "data" {
			data = append(data, strings.TrimPrefix(value, " "))
		}
	}
	if data != nil {
		s := strings.Join(data, "\n")
		tail = &s
	}
	return msgs, tail
}

// FuzzReader checks Reader against reference with a small limit, so that
// messages over it are common.
func FuzzReader(f *testing.F) {
	f.Add("data: {\"type\":\"a\"}\n\n")
	f.Add("data: {\"type\":\"a\"}\r\n\r\n: c\rdata:x\n\n")
	f.Add("data")
	f.Add("data: 0123456789abcdef0123456789abcdef\n\ndata: x\n\n")
	f.Fuzz(func(t *testing.T, stream string) {
		const max = 32
		want, tail := reference(stream)
		got := readAll(t, stream, max)
		end := got[len(got)-1]
		got = got[:len(got)-1]
		if len(got) != len(want) {
			t.Fatalf("got %d messages %v, want %v", len(got), got, want)
		}
		for i, w := range want {
			if len(w) > max {
				if !errors.Is(got[i].err, ErrTooLarge) {
					t.Fatalf("message %d of %d bytes = %v, want ErrTooLarge", i, len(w), got[i])
				}
			} else if got[i].err != nil || got[i].data != w {
				t.Fatalf("message %d = %v, want %q", i, got[i], w)
			}
		}
		switch {
		case tail == nil && !errors.Is(end.err, io.EOF):
			t.Fatalf("end = %v, want io.EOF", end)
		case tail != nil && !errors.Is(end.err, io.ErrUnexpectedEOF):
			t.Fatalf("end = %v, want io.ErrUnexpectedEOF", end)
		case tail != nil && len(*tail) <= max && end.data != *tail:
			t.Fatalf("end = %v, want the cut message %q", end, *tail)
		case tail != nil && len(*tail) > max && end.data != "":
			t.Fatalf("end = %v, want no data of a cut message over the limit", end)
		}
	})
}
