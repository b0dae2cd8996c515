package app

import (
	"fmt"
	"os/exec"
	"runtime"
	"time"
)

// fileManager is the program that shows a folder in the desktop's file
// manager, and the package that has it where it is often missing.
func fileManager() (name, pkg string) {
	switch runtime.GOOS {
	case "darwin":
		return "open", ""
	case "windows":
		return "explorer", ""
	}
	return "xdg-open", "xdg-utils"
}

// openFolder shows path in the file manager. Its error is a sentence for
// the user that names the folder, so that they can open it themselves.
func openFolder(path string) error {
	name, pkg := fileManager()
	bin, err := exec.LookPath(name)
	if err != nil {
		install := ""
		if pkg != "" {
			install = " (install " + pkg + ")"
		}
		return fmt.Errorf("no file manager could be opened: %s is not installed%s. The folder is %s", name, install, path)
	}
	cmd := exec.Command(bin, path)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("no file manager could be opened: starting %s failed (%w). The folder is %s", name, err, path)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// xdg-open fails at once when nothing handles folders, but may stay
	// until the file manager is closed when it works: wait only a little.
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("no file manager could be opened: %s failed (%w). The folder is %s", name, err, path)
		}
	case <-time.After(3 * time.Second):
	}
	return nil
}
