package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"time"

	"codehydra/workspace"
)

// The event that carries a message's tokens and cost.
const EventMessageUpdated = "message.updated"

// Usage is what an agent server's model calls cost: in all, and by the
// local calendar day on which their messages completed.
type Usage struct {
	Total workspace.AgentUsage
	// Days maps a day ("2006-01-02", local time) to the usage of the
	// assistant messages that completed on it and that the tracker saw:
	// those of the days the last resync read, and those completed since.
	Days map[string]workspace.AgentUsage
}

// Day is the usage of the messages completed on the local calendar day
// of t.
func (u Usage) Day(t time.Time, loc *time.Location) workspace.AgentUsage {
	return u.Days[dayOf(t, loc)]
}

func dayOf(t time.Time, loc *time.Location) string {
	return t.In(loc).Format(time.DateOnly)
}

// tokens are opencode's token counts of a session or an assistant message.
type tokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// usageInfo is the part of a session's or message's info the usage
// tracker reads.
type usageInfo struct {
	ID        string  `json:"id"`
	SessionID string  `json:"sessionID"`
	Directory string  `json:"directory"` // a session's worktree
	Role      string  `json:"role"`
	Cost      float64 `json:"cost"`
	Tokens    tokens  `json:"tokens"`
	Time      struct {
		Updated   int64 `json:"updated"`
		Completed int64 `json:"completed"`
	} `json:"time"`
}

func (i usageInfo) usage() workspace.AgentUsage {
	t := i.Tokens
	return workspace.AgentUsage{
		InputTokens:  t.Input + t.Cache.Read + t.Cache.Write,
		OutputTokens: t.Output + t.Reasoning,
		Cost:         i.Cost,
	}
}

// dayUsage is a completed assistant message's usage, its session and its
// day.
type dayUsage struct {
	session string
	day     string
	usage   workspace.AgentUsage
}

// UsageTracker folds an agent server's sessions of one worktree (opencode
// keeps each session's running totals of tokens and cost) and their
// assistant messages (for the day each completed on) into a Usage. The
// zero value is not usable; use NewUsageTracker. It is not safe for
// concurrent use.
//
// The total is the sum over the worktree's sessions, subagents' included,
// as opencode reports them in session events and GET /session; a deleted
// session no longer counts, as it would not after a restart either.
// opencode reports the sessions of every worktree of the repository (see
// sessionsOf): those of other directories, and their messages, are not
// counted, or each workspace would count the whole project's.
type UsageTracker struct {
	loc      *time.Location
	dir      string
	sessions map[string]workspace.AgentUsage
	messages map[string]dayUsage
}

// NewUsageTracker returns an empty tracker of the sessions whose
// directory is dir that tells days in loc.
func NewUsageTracker(loc *time.Location, dir string) *UsageTracker {
	return &UsageTracker{loc: loc, dir: filepath.Clean(dir), sessions: map[string]workspace.AgentUsage{}, messages: map[string]dayUsage{}}
}

// inDir reports whether the session of info runs in dir.
func (i usageInfo) inDir(dir string) bool {
	return filepath.Clean(i.Directory) == dir
}

// Usage returns the current usage.
func (u *UsageTracker) Usage() Usage {
	var total workspace.AgentUsage
	for _, s := range u.sessions {
		total = total.Plus(s)
	}
	days := map[string]workspace.AgentUsage{}
	for _, m := range u.messages {
		days[m.day] = days[m.day].Plus(m.usage)
	}
	return Usage{Total: total, Days: days}
}

// Apply folds one event into the tracker and reports whether the usage
// may have changed.
func (u *UsageTracker) Apply(e Event) bool {
	if !usageEvent(e.Type) {
		return false
	}
	var p struct {
		Info usageInfo `json:"info"`
	}
	if len(e.Properties) == 0 || json.Unmarshal(e.Properties, &p) != nil || p.Info.ID == "" {
		return false
	}
	switch e.Type {
	case EventSessionDeleted:
		if _, ok := u.sessions[p.Info.ID]; !ok {
			return false
		}
		delete(u.sessions, p.Info.ID)
		maps.DeleteFunc(u.messages, func(_ string, m dayUsage) bool { return m.session == p.Info.ID })
		return true
	case EventMessageUpdated:
		return u.message(p.Info)
	default:
		if !p.Info.inDir(u.dir) {
			return false
		}
		before, known := u.sessions[p.Info.ID]
		u.sessions[p.Info.ID] = p.Info.usage()
		return !known || before != p.Info.usage()
	}
}

// usageEvent reports whether events of type typ can change the usage; the
// others (text deltas among them, many a second) are not even decoded.
func usageEvent(typ string) bool {
	switch typ {
	case EventSessionCreated, EventSessionUpdated, EventSessionDeleted, EventMessageUpdated:
		return true
	}
	return false
}

// message records a completed assistant message of a session of the
// tracker's.
func (u *UsageTracker) message(i usageInfo) bool {
	if _, ours := u.sessions[i.SessionID]; !ours || i.Role != "assistant" || i.Time.Completed == 0 {
		return false
	}
	m := dayUsage{session: i.SessionID, day: dayOf(time.UnixMilli(i.Time.Completed), u.loc), usage: i.usage()}
	if u.messages[i.ID] == m {
		return false
	}
	u.messages[i.ID] = m
	return true
}

// Resync replaces what the tracker knows with what the server reported:
// its sessions (those of other directories are left out), and the
// messages of the sessions it read them of. It reports whether the usage
// changed.
func (u *UsageTracker) Resync(sessions, messages []usageInfo) bool {
	before := u.Usage()
	u.sessions = make(map[string]workspace.AgentUsage, len(sessions))
	for _, s := range sessions {
		if s.ID != "" && s.inDir(u.dir) {
			u.sessions[s.ID] = s.usage()
		}
	}
	u.messages = map[string]dayUsage{}
	for _, m := range messages {
		if m.ID != "" {
			u.message(m)
		}
	}
	after := u.Usage()
	return before.Total != after.Total || !maps.Equal(before.Days, after.Days)
}

// readUsage reads what UsageTracker.Resync takes from the server: the
// sessions whose directory is dir, and the messages of those updated
// since the start of the local day of now (the tray's day total needs
// them; older ones cannot add to it). Reading every session's messages
// instead would cost a request per session on each reconnect. Sessions is
// nil if they could not be read; a session whose messages could not be
// read is left out of messages, and err says so.
func readUsage(ctx context.Context, api agentAPI, dir string, now time.Time, loc *time.Location) (sessions, messages []usageInfo, err error) {
	var all []usageInfo
	if err := api.getJSON(ctx, "/session", resyncTimeout, &all); err != nil {
		return nil, nil, err
	}
	dir = filepath.Clean(dir)
	sessions = []usageInfo{}
	for _, s := range all {
		if s.inDir(dir) {
			sessions = append(sessions, s)
		}
	}
	var errs []error
	y, m, d := now.In(loc).Date()
	dayStart := time.Date(y, m, d, 0, 0, 0, 0, loc).UnixMilli()
	for _, s := range sessions {
		if s.ID == "" || s.Time.Updated < dayStart {
			continue
		}
		var list []struct {
			Info usageInfo `json:"info"`
		}
		if err := api.getJSON(ctx, "/session/"+url.PathEscape(s.ID)+"/message", resyncTimeout, &list); err != nil {
			errs = append(errs, fmt.Errorf("read the messages of session %s: %w", s.ID, err))
			continue
		}
		for _, m := range list {
			messages = append(messages, m.Info)
		}
	}
	return sessions, messages, errors.Join(errs...)
}
