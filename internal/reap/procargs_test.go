package reap

import (
	"encoding/binary"
	"slices"
	"testing"
)

func procArgs(argc uint32, parts ...string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, argc)
	for i, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
		if i == 0 {
			b = append(b, 0, 0, 0) // padding after the executable's path
		}
	}
	return b
}

func TestProcArgsEnviron(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  []byte
		want []string
	}{
		{"argv then env", procArgs(2, "/bin/opencode", "opencode", "serve", "A=1", "CODEHYDRA_AGENT_ID=x"),
			[]string{"A=1", "CODEHYDRA_AGENT_ID=x"}},
		{"an argument that looks like the marker is not env", procArgs(2, "/bin/sh", "sh", "CODEHYDRA_AGENT_ID=x", "B=2"),
			[]string{"B=2"}},
		{"env ends at an empty string", append(procArgs(1, "/bin/x", "x", "A=1"), append([]byte{0}, "junk=1\x00"...)...),
			[]string{"A=1"}},
		{"no env", procArgs(1, "/bin/x", "x"), nil},
		{"argc past the end", procArgs(9, "/bin/x", "x", "A=1"), nil},
		{"too short", []byte{1, 0}, nil},
		{"no path end", []byte{1, 0, 0, 0, 'a', 'b'}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := procArgsEnviron(tc.buf); !slices.Equal(got, tc.want) {
				t.Fatalf("procArgsEnviron = %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzProcArgsEnviron(f *testing.F) {
	f.Add(procArgs(2, "/bin/opencode", "opencode", "serve", "A=1"))
	f.Fuzz(func(t *testing.T, b []byte) { procArgsEnviron(b) })
}
