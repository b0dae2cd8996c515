package tasks

import (
	"os"
	"testing"

	"codehydra/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashingAppEnv) != "" {
		runCrashingApp()
		return
	}
	os.Exit(testenv.Main(m, "tasks-test-home-"))
}
