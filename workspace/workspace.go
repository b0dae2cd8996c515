// Package workspace is CodeHydra's domain: projects (git repositories),
// their workspaces (git worktrees), and what can be done with them —
// discovery, create, delete, status and metadata — published as change
// events. It knows nothing of MCP, OpenCode or the GUI; agent status flows in
// through the Agents interface, which the opencode package implements.
package workspace

import (
	"context"
	"errors"
	"fmt"
)

// Project is a git repository that CodeHydra manages. Its main checkout is
// the project itself, never a workspace.
type Project struct {
	// Name is the base name of Path.
	Name string `json:"name"`
	// Path is absolute, cleaned, with symlinks resolved.
	Path string `json:"path"`
}

// Workspace is a git worktree of a project (the main checkout excluded).
type Workspace struct {
	// Name is the branch name, or the folder name when HEAD is detached.
	Name string `json:"name"`
	// Branch is the checked-out branch, "" when HEAD is detached.
	Branch string `json:"branch,omitempty"`
	// Path is absolute, cleaned, with symlinks resolved.
	Path string `json:"path"`
	// ProjectPath is the Path of the project the workspace belongs to.
	ProjectPath string `json:"projectPath"`
	// Head is the commit checked out.
	Head string `json:"head,omitempty"`
	// Detached reports a worktree on a detached HEAD.
	Detached bool `json:"detached,omitempty"`
	// BranchReused is set only on what Create returns (and on its
	// workspace-added event): the branch existed before and was reused as
	// it was. Note then says so in words.
	BranchReused bool `json:"branchReused,omitempty"`
	// Note tells, on what Create returns, what it did that the caller may
	// not expect: a reused branch, the base it kept, a base that did not
	// apply.
	Note string `json:"note,omitempty"`
}

// AgentType summarises the sessions of a workspace's agent.
type AgentType string

// The agent types of docs/DESIGN.md's workspace_get_status.
const (
	AgentNone  AgentType = "none"
	AgentIdle  AgentType = "idle"
	AgentBusy  AgentType = "busy"
	AgentMixed AgentType = "mixed"
)

// AgentCounts counts a workspace agent's sessions by state.
type AgentCounts struct {
	Idle  int `json:"idle"`
	Busy  int `json:"busy"`
	Total int `json:"total"`
}

// AgentState is the supervisor's view of a workspace's agent process.
type AgentState string

// Agent process states.
const (
	AgentStateNone     AgentState = ""          // no supervisor, or never started
	AgentStateStarting AgentState = "starting"  // process started, not yet ready
	AgentStateReady    AgentState = "ready"     // healthy and connected to the MCP server
	AgentStateFailed   AgentState = "failed"    // gave up; needs a restart by the user
	AgentStateStopped  AgentState = "stopped"   // stopped on purpose
	AgentStateNotFound AgentState = "not-found" // no opencode binary
	// AgentStateHibernated: stopped to save memory until something needs
	// it (workspace_wake, a prompt, its port), which starts it again.
	AgentStateHibernated AgentState = "hibernated"
)

// AgentStatus is what the agent of one workspace is doing.
type AgentStatus struct {
	Type   AgentType   `json:"type"`
	Counts AgentCounts `json:"counts"`
	// NeedsInput counts sessions waiting for a permission or an answer.
	NeedsInput int `json:"needsInput"`
	// State is the agent process's state; Detail explains a failed or
	// not-found state in words a user can act on.
	State  AgentState `json:"state,omitempty"`
	Detail string     `json:"detail,omitempty"`
	// Port is the agent server's port, 0 while none is ready.
	Port int `json:"port,omitempty"`
	// Retry is set while sessions wait to retry a model request that
	// failed (opencode's "retry" status; e.g. the model cannot be
	// reached). Such sessions still count as busy.
	Retry AgentRetry `json:"retry,omitzero"`
	// Sandbox says whether the kernel confines the agent, and all it
	// starts, to its workspace.
	Sandbox AgentSandbox `json:"sandbox"`
	// Requests are the agent's pending permission requests and questions,
	// oldest first; Answer replies to them.
	Requests []PendingRequest `json:"requests,omitempty"`
	// Usage is what the model calls of the workspace's sessions cost so
	// far, as opencode records them. It is the last known while the agent
	// does not run.
	Usage AgentUsage `json:"usage"`
	// UsageToday is the part of Usage in the messages completed on the
	// local calendar day of the status's reading (the tray's tooltip).
	UsageToday AgentUsage `json:"-"`
}

// AgentUsage is what model calls used, in opencode's figures.
type AgentUsage struct {
	// InputTokens counts the tokens the model read: opencode's input,
	// cache read and cache write tokens.
	InputTokens int64 `json:"inputTokens"`
	// OutputTokens counts the tokens the model wrote: opencode's output
	// and reasoning tokens.
	OutputTokens int64 `json:"outputTokens"`
	// Cost is in US dollars, by the prices of the model's provider
	// configuration (0 where it has none).
	Cost float64 `json:"cost"`
}

// Plus is u and v added.
func (u AgentUsage) Plus(v AgentUsage) AgentUsage {
	return AgentUsage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens, Cost: u.Cost + v.Cost}
}

// AgentSandbox says whether an agent's processes are confined by the
// kernel (on Linux, a Landlock domain of their own) and with which
// Landlock ABI, or why they are not.
type AgentSandbox struct {
	Enforced bool   `json:"enforced"`
	ABI      int    `json:"abi,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// UnixSocketFilter says that a seccomp filter keeps the agent from
	// making unix sockets, on kernels before Landlock ABI 9.
	UnixSocketFilter bool `json:"unixSocketFilter,omitempty"`
	// Gaps says what the sandbox leaves unrestricted on this kernel and
	// with these settings.
	Gaps string `json:"gaps,omitempty"`
}

// AgentRetry says that sessions of an agent retry a failed model request,
// with opencode's words for the failure, of the session that tried most.
type AgentRetry struct {
	// Sessions counts the sessions that retry, subagents' included.
	Sessions int `json:"sessions"`
	// Attempt is opencode's count of attempts so far.
	Attempt int `json:"attempt"`
	// Message is opencode's reason, e.g. "Cannot connect to API".
	Message string `json:"message"`
	// Next is when opencode tries again, in Unix milliseconds; 0 if unknown.
	Next int64 `json:"next,omitempty"`
}

// FirstPrompt is the prompt a new workspace's agent is given as soon as it
// is ready (workspace_create's initialPrompt).
type FirstPrompt struct {
	Prompt string `json:"prompt"`
	// Agent is the opencode agent to run it with ("build", "plan"); ""
	// for opencode's default.
	Agent string `json:"agent,omitempty"`
	// Model is "provider/model"; "" for the creator's current model, or
	// opencode's default.
	Model string `json:"model,omitempty"`
}

// DeliveryState is how far a first prompt has come.
type DeliveryState string

// The states of a first prompt's delivery.
const (
	DeliveryPending   DeliveryState = "pending"   // waiting for the agent to be ready
	DeliveryDelivered DeliveryState = "delivered" // the agent accepted it, in SessionID
	DeliveryFailed    DeliveryState = "failed"    // it will not be delivered; Error says why
)

// PromptDelivery is what became of a workspace's first prompt.
type PromptDelivery struct {
	State     DeliveryState `json:"state"`
	SessionID string        `json:"sessionId,omitempty"`
	Error     string        `json:"error,omitempty"`
}

// NoAgent is the status of a workspace without a running agent.
var NoAgent = AgentStatus{Type: AgentNone}

// Status is the state of a workspace as workspace_get_status reports it.
type Status struct {
	IsDirty bool `json:"isDirty"`
	// Base is the branch the workspace is compared with; Ahead and Behind
	// count commits relative to it (both 0 when the base is unknown).
	Base   string      `json:"base,omitempty"`
	Ahead  int         `json:"ahead"`
	Behind int         `json:"behind"`
	Agent  AgentStatus `json:"agent"`
	// Ports is the workspace's port block, nil when it has none;
	// PortsNote then says why, when known (Manager.Ports).
	Ports     *PortBlock `json:"ports,omitempty"`
	PortsNote string     `json:"portsNote,omitempty"`
}

// Agents is the part of the agent supervisor that the domain needs. The
// opencode package implements it; a nil Agents means "no agents".
type Agents interface {
	// AgentStatus reports the agent of the workspace at path.
	AgentStatus(path string) AgentStatus
	// StopAgent stops the workspace's agent and waits until it is gone. It
	// is the first step of a delete; stopping an agent that does not run is
	// not an error.
	StopAgent(ctx context.Context, path string) error
}

// Code classifies an error for callers such as the MCP server. The values
// are docs/DESIGN.md's error codes.
type Code string

// Error codes.
const (
	CodeWorkspaceNotFound Code = "workspace-not-found"
	CodeProjectNotFound   Code = "project-not-found"
	CodeInvalidInput      Code = "invalid-input"
	CodeConflict          Code = "conflict"
	CodeForbidden         Code = "forbidden"
	CodeRateLimited       Code = "rate-limited"
	CodeTimeout           Code = "timeout"
	CodeInternal          Code = "internal-error"
)

// Error is an error with a Code and a message meant for the user.
type Error struct {
	Code    Code
	Message string
	// Err is the underlying cause, if any; it is not part of Message.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Code of err: the code of the first *Error in its chain,
// CodeTimeout for a context deadline, else CodeInternal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return CodeTimeout
	}
	return CodeInternal
}
