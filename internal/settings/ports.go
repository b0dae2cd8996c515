package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// Ports says where the port block of each workspace comes from: the
// ports from Range ("first-last") in blocks of PerWorkspace (docs/DESIGN.md
// "Dev servers and ports").
type Ports struct {
	Range        string `json:"range"`
	PerWorkspace int    `json:"perWorkspace"`
}

// DefaultPorts is the ports setting when the file has none.
func DefaultPorts() Ports { return Ports{Range: "20000-29999", PerWorkspace: 10} }

// Bounds is Range's first and last port; ok is false when Range is not
// two numbers joined by a dash.
func (p Ports) Bounds() (first, last int, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(p.Range), "-")
	first, errA := strconv.Atoi(strings.TrimSpace(a))
	last, errB := strconv.Atoi(strings.TrimSpace(b))
	return first, last, found && errA == nil && errB == nil
}

// validatePorts checks the ports setting: a range of unprivileged ports
// that holds at least one block.
func (s Settings) validatePorts() []error {
	p := s.Ports
	var errs []error
	first, last, ok := p.Bounds()
	switch {
	case !ok:
		errs = append(errs, fmt.Errorf("ports.range is %q: use two port numbers joined by a dash, such as \"20000-29999\"", p.Range))
	case first < 1024 || last > 65535:
		errs = append(errs, fmt.Errorf("ports.range is %q: use ports from 1024 to 65535 (the ports below 1024 need root)", p.Range))
	case first > last:
		errs = append(errs, fmt.Errorf("ports.range is %q: put the lower port first", p.Range))
	}
	if n := p.PerWorkspace; n < 1 || n > 100 {
		errs = append(errs, fmt.Errorf("ports.perWorkspace is %d: use 1 to 100", n))
	} else if len(errs) == 0 && n > last-first+1 {
		errs = append(errs, fmt.Errorf("ports.perWorkspace is %d, more than the %d ports of ports.range %q: widen the range or give each workspace fewer ports", n, last-first+1, p.Range))
	}
	return errs
}
