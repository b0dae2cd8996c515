package workspace

// Landing a workspace's work (issue 23): its preflight, its merge into the
// base or another branch, and its update from the base. The types are here;
// the git work that fills them is in land_*.go.

// Strategy is how a workspace's branch is brought into a target branch.
type Strategy string

// The strategies of a merge.
const (
	// StrategyMerge makes a merge commit on the target (a fast-forward
	// when the target has not moved since the workspace's merge-base).
	StrategyMerge Strategy = "merge"
	// StrategySquash makes one commit on the target with all the
	// workspace's changes.
	StrategySquash Strategy = "squash"
	// StrategyRebase replays the workspace's commits onto the target,
	// moves the workspace's branch to them, then fast-forwards the target.
	StrategyRebase Strategy = "rebase"
)

// MergeOptions choose what Merge and Preflight do.
type MergeOptions struct {
	// Strategy is "" for StrategyMerge.
	Strategy Strategy
	// Target is the branch to merge into; "" for the workspace's base.
	Target string
	// Message is the commit message of a merge or squash commit; "" for
	// one CodeHydra writes (naming the branch, and for a squash listing
	// the commits).
	Message string
}

// Preflight is what a merge would do, found without touching any working
// tree: CanMerge is true when nothing in Blockers stands in the way.
type Preflight struct {
	Workspace string   `json:"workspace"`
	Branch    string   `json:"branch"`
	Head      string   `json:"head"`
	Target    string   `json:"target"`
	Strategy  Strategy `json:"strategy"`
	// TargetHead is the commit the target branch is at.
	TargetHead string `json:"targetHead"`
	// Ahead counts the workspace's commits the target lacks; Behind the
	// target's commits the workspace lacks. Ahead 0 with no uncommitted
	// change means there is nothing to merge (UpToDate).
	Ahead    int  `json:"ahead"`
	Behind   int  `json:"behind"`
	UpToDate bool `json:"upToDate,omitempty"`
	// Uncommitted names the workspace's uncommitted and untracked files:
	// only commits are merged, so any refuses the merge.
	Uncommitted []string `json:"uncommitted,omitempty"`
	// Conflicts names the files a merge of the workspace's head into the
	// target conflicts in (git merge-tree --write-tree).
	Conflicts []string `json:"conflicts,omitempty"`
	// CheckedOutAt is the worktree where the target branch is checked out
	// ("" when none is); the merge updates that checkout with the branch.
	CheckedOutAt string `json:"checkedOutAt,omitempty"`
	// TargetDirty names the files changed in the CheckedOutAt worktree:
	// any refuses the merge, as the branch must not move under them.
	TargetDirty []string `json:"targetDirty,omitempty"`
	// CanMerge says that Merge would go ahead; Blockers say why not, one
	// sentence each, meant for the user.
	CanMerge bool     `json:"canMerge"`
	Blockers []string `json:"blockers,omitempty"`
}

// MergeResult is what Merge did.
type MergeResult struct {
	Preflight Preflight `json:"preflight"`
	// Merged is true when the target moved; TargetHead is where it is now.
	Merged     bool   `json:"merged"`
	TargetHead string `json:"targetHead"`
	// Verified is true when the target was checked to hold all of the
	// workspace's work after the merge: only then may the workspace be
	// deleted.
	Verified bool `json:"verified"`
	// Head is the workspace's head the merge verified: its head, or for
	// a rebase the replayed tip its branch was moved to. A delete after
	// the merge expects it (DeleteOptions.ExpectHead).
	Head string `json:"head"`
}

// landedHead is the workspace's head once moves are made: the replayed
// tip a rebase moves its branch to, else the head the preflight read.
func landedHead(pl *plan, moves []refMove) string {
	for _, mv := range moves {
		if mv.Ref == "refs/heads/"+pl.pf.Branch {
			return mv.New
		}
	}
	return pl.pf.Head
}

// UpdateMode is how UpdateFromBase brings the base into a workspace.
type UpdateMode string

// The modes of an update from the base.
const (
	UpdateRebase UpdateMode = "rebase"
	UpdateMerge  UpdateMode = "merge"
)

// UpdateResult is what UpdateFromBase did.
type UpdateResult struct {
	Base string     `json:"base"`
	Mode UpdateMode `json:"mode"`
	// OldHead and NewHead are the workspace's head before and after;
	// Updated is false when the workspace had all of the base already.
	OldHead string `json:"oldHead"`
	NewHead string `json:"newHead"`
	Updated bool   `json:"updated"`
}

// PullRequestOptions choose what CreatePullRequest opens.
type PullRequestOptions struct {
	// Title and Body of the pull request; "" lets the PR command fill them
	// from the commits (gh's --fill).
	Title string
	Body  string
	// CreatedBranchOnly refuses to push a branch that CodeHydra did not
	// create for a workspace (PushOptions.CreatedBranchOnly): set when a
	// workspace's agent asks.
	CreatedBranchOnly bool
}

// PullRequest is what pushing a workspace's branch and opening its pull
// request did.
type PullRequest struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Pushed is true when `git push -u <remote> <branch>` succeeded.
	Pushed bool `json:"pushed"`
	// URL is the pull request's address, as the PR command printed it; it
	// is recorded as the workspace's metadata "pr".
	URL string `json:"url,omitempty"`
	// Note says, when no pull request was opened, why and what the user
	// can do (no remote, no gh on PATH and no prCommand set, …).
	Note string `json:"note,omitempty"`
}
