package workspace

import (
	"slices"
	"testing"
)

func TestAPortBlocksEnvironmentNamesItsFirstPortAndAllOfThem(t *testing.T) {
	b := PortBlock{First: 20010, Count: 3}
	want := []string{"CODEHYDRA_PORT=20010", "CODEHYDRA_PORTS=20010,20011,20012", "PORT=20010"}
	if got := b.Env(); !slices.Equal(got, want) {
		t.Fatalf("Env() = %q, want %q", got, want)
	}
	if got := b.String(); got != "20010-20012" {
		t.Fatalf("String() = %q", got)
	}
	if (PortBlock{}).Env() != nil {
		t.Fatal("an empty block gives an environment")
	}
}

func TestPortBlocksOverlapOnlyWhenTheyShareAPort(t *testing.T) {
	a := PortBlock{First: 20000, Count: 10}
	for _, c := range []struct {
		b    PortBlock
		want bool
	}{
		{PortBlock{First: 20010, Count: 10}, false},
		{PortBlock{First: 19990, Count: 10}, false},
		{PortBlock{First: 20009, Count: 1}, true},
		{PortBlock{First: 19995, Count: 6}, true},
		{PortBlock{First: 20002, Count: 2}, true},
	} {
		if got := a.Overlaps(c.b); got != c.want || c.b.Overlaps(a) != c.want {
			t.Errorf("%v overlaps %v = %v, want %v", a, c.b, got, c.want)
		}
	}
}
