package opencode

import "codehydra/workspace"

// PromptDelivery is a stand-in until the first-prompt delivery lands on
// this branch: it knows of no first prompt. The lead deletes this file
// when merging the real one.
func (s *Supervisor) PromptDelivery(string) (workspace.PromptDelivery, bool) {
	return workspace.PromptDelivery{}, false
}
