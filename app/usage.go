package app

// What the agents cost: a line in each workspace's submenu, and the day's
// total in the summary (the tray's tooltip and the menu's first line).

import (
	"context"
	"fmt"
	"time"

	"fyne.io/fyne/v2"

	"codehydra/workspace"
)

// UsageLine describes an agent's usage, e.g. "Used 12.3k tokens in, 1.2k
// out · $0.42"; "" when it used nothing. The cost is left out when the
// model's provider gave no prices.
func UsageLine(u workspace.AgentUsage) string {
	if u == (workspace.AgentUsage{}) {
		return ""
	}
	line := fmt.Sprintf("Used %s tokens in, %s out", tokenCount(u.InputTokens), tokenCount(u.OutputTokens))
	if u.Cost > 0 {
		line += " · " + dollars(u.Cost)
	}
	return line
}

// usageItems is the workspace's usage line and a separator, or nothing.
func usageItems(w WorkspaceState) []*fyne.MenuItem {
	line := UsageLine(w.Agent.Usage)
	if line == "" {
		return nil
	}
	return []*fyne.MenuItem{disabled(line), fyne.NewMenuItemSeparator()}
}

// DayTotal is what the workspaces' agents used on the local calendar day
// on which their statuses were read: the usage of the assistant messages
// that completed on it. A deleted workspace's no longer counts.
func DayTotal(s State) workspace.AgentUsage {
	var total workspace.AgentUsage
	for _, p := range s.Projects {
		for _, w := range p.Workspaces {
			total = total.Plus(w.Agent.UsageToday)
		}
	}
	return total
}

// daySummary is the summary's part for the day's total, e.g. "today 13.5k
// tokens, $0.42"; "" when nothing was used today.
func daySummary(s State) string {
	u := DayTotal(s)
	if u == (workspace.AgentUsage{}) {
		return ""
	}
	part := "today " + tokenCount(u.InputTokens+u.OutputTokens) + " tokens"
	if u.Cost > 0 {
		part += ", " + dollars(u.Cost)
	}
	return part
}

// tokenCount is n short: 950, 12.3k, 4.5M.
func tokenCount(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	default:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
	}
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}

// dollars is a cost in US dollars, to the cent; a cost below a cent shows
// as such rather than as nothing.
func dollars(c float64) string {
	if c < 0.005 {
		return "<$0.01"
	}
	return fmt.Sprintf("$%.2f", c)
}

// untilMidnight is how long from now until the next local midnight, when
// the day's total starts afresh.
func untilMidnight(now time.Time) time.Duration {
	y, m, d := now.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, now.Location()).Sub(now)
}

// refreshAtMidnight reads the agents' statuses afresh at each local
// midnight, so that the day's total does not carry yesterday's figures
// until some agent changes.
func (t *Tray) refreshAtMidnight(ctx context.Context) {
	for {
		timer := time.NewTimer(untilMidnight(time.Now()) + time.Second)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		t.mu.Lock()
		t.reload(ctx)
		t.mu.Unlock()
		t.publish()
	}
}
