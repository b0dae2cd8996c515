package app

import (
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// projectSelect is a select of projects, labelled as projectChoices does,
// that calls pick with the path of the project chosen. The New workspace
// window and Settings → Projects pick a project this way.
func projectSelect(projects []workspace.Project, pick func(path string)) *widget.Select {
	labels := projectChoices(projects)
	s := widget.NewSelect(labels, func(label string) {
		for i, l := range labels {
			if l == label {
				pick(projects[i].Path)
			}
		}
	})
	s.PlaceHolder = "Choose a project"
	return s
}
