package daemon

import (
	"os"
	"testing"

	"codehydra/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, "codehydra-daemon-test-home-")) }
