package opencode

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// readAll reads every event of stream; bad events are recorded by their
// error text.
func readAll(t *testing.T, stream string) (types []string, errs []error, end error) {
	t.Helper()
	er := NewEventReader(strings.NewReader(stream))
	for i := 0; i < 100; i++ {
		e, err := er.Next()
		if errors.Is(err, ErrBadEvent) || errors.Is(err, ErrEventTooLarge) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return types, errs, err
		}
		types = append(types, e.Type)
	}
	t.Fatal("reader did not end")
	return
}

func TestEventReaderReadsOpencodeStreams(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		types  []string
		bad    int
		// tooLarge is how many of the bad ones were too large.
		tooLarge int
		end      error
	}{
		{
			name: "opencode's own framing",
			stream: "data: {\"id\":\"evt_1\",\"type\":\"server.connected\",\"properties\":{}}\n\n" +
				"data: {\"id\":\"evt_2\",\"type\":\"session.status\",\"properties\":{\"sessionID\":\"ses_1\",\"status\":{\"type\":\"busy\"}}}\n\n",
			types: []string{"server.connected", "session.status"},
			end:   io.EOF,
		},
		{
			name:   "CRLF and CR line ends",
			stream: "data: {\"type\":\"a\"}\r\n\r\ndata: {\"type\":\"b\"}\r\rdata: {\"type\":\"c\"}\n\n",
			types:  []string{"a", "b", "c"},
			end:    io.EOF,
		},
		{
			name:   "data split over lines, comments, other fields, no space after colon",
			stream: ": keep-alive\nevent: message\nid: 7\nretry: 1000\ndata:{\"type\":\ndata: \"x\"}\n\n",
			types:  []string{"x"},
			end:    io.EOF,
		},
		{
			name:   "blank lines between messages are not events",
			stream: "\n\n\ndata: {\"type\":\"a\"}\n\n\n\n",
			types:  []string{"a"},
			end:    io.EOF,
		},
		{
			name:   "bad events are reported and skipped",
			stream: "data: not json\n\ndata: {\"id\":\"x\"}\n\ndata: [1,2]\n\ndata: {\"type\":\"ok\"}\n\n",
			types:  []string{"ok"},
			bad:    3,
			end:    io.EOF,
		},
		{
			name:   "stream cut inside a message",
			stream: "data: {\"type\":\"a\"}\n\ndata: {\"type\":\"b\"",
			types:  []string{"a"},
			end:    io.ErrUnexpectedEOF,
		},
		{
			name:   "empty stream",
			stream: "",
			end:    io.EOF,
		},
		{
			name:     "too large a message is skipped",
			stream:   "data: {\"type\":\"" + strings.Repeat("x", maxEventSize) + "\"}\n\ndata: {\"type\":\"after\"}\n\n",
			types:    []string{"after"},
			bad:      1,
			tooLarge: 1,
			end:      io.EOF,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			types, errs, end := readAll(t, tt.stream)
			if strings.Join(types, ",") != strings.Join(tt.types, ",") {
				t.Errorf("types = %v, want %v", types, tt.types)
			}
			if len(errs) != tt.bad {
				t.Errorf("bad events = %v, want %d", errs, tt.bad)
			}
			tooLarge := 0
			for _, err := range errs {
				if errors.Is(err, ErrEventTooLarge) {
					tooLarge++
				}
			}
			if tooLarge != tt.tooLarge {
				t.Errorf("events too large = %d, want %d (%v)", tooLarge, tt.tooLarge, errs)
			}
			if !errors.Is(end, tt.end) {
				t.Errorf("end = %v, want %v", end, tt.end)
			}
		})
	}
}

func TestParseEventKeepsProperties(t *testing.T) {
	e, err := ParseEvent([]byte(`{"id":"evt_1","type":"permission.replied","properties":{"sessionID":"ses_1","requestID":"per_1","reply":"once"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "evt_1" || e.Type != EventPermissionReplied || !strings.Contains(string(e.Properties), `"requestID":"per_1"`) {
		t.Errorf("event = %+v", e)
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","type":"session.status","properties":{"sessionID":"s","status":{"type":"busy"}}}`))
	f.Add([]byte(`{"type":""}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEvent(data)
		if err == nil && e.Type == "" {
			t.Fatal("accepted an event without type")
		}
		if err != nil && !errors.Is(err, ErrBadEvent) {
			t.Fatalf("error does not wrap ErrBadEvent: %v", err)
		}
		if err == nil {
			// Whatever parses must not break the tracker.
			tr := NewTracker()
			tr.Apply(e)
			_ = tr.Summary()
		}
	})
}
