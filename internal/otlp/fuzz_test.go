package otlp

import (
	"fmt"
	"testing"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzPartialSuccess reads whatever a collector replies without failing,
// and reads a reply the protobuf runtime wrote as the runtime means it.
func FuzzPartialSuccess(f *testing.F) {
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01}, int64(3), "too old")
	f.Add([]byte{0x0a, 0xff}, int64(-1), "")
	f.Add([]byte{}, int64(0), "x")
	f.Fuzz(func(t *testing.T, reply []byte, rejected int64, why string) {
		_ = partialSuccess(reply, "spans")

		if !utf8.ValidString(why) {
			return
		}
		b, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: rejected, ErrorMessage: why}})
		if err != nil {
			t.Fatal(err)
		}
		err = partialSuccess(b, "spans")
		if rejected == 0 && why == "" {
			if err != nil {
				t.Errorf("a full success read as %v", err)
			}
			return
		}
		if want := fmt.Sprintf("the collector rejected %d spans: %s", rejected, why); err == nil || err.Error() != want {
			t.Errorf("read %v, want %s", err, want)
		}
	})
}
