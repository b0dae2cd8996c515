package settings

import (
	"path/filepath"
	"testing"

	"codehydra/internal/testenv"
)

func TestAPortsSettingGivenInPartKeepsTheDefaultsOfTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	testenv.WriteFile(t, path, `{"ports": {"range": "31000-31999"}}`)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Ports{Range: "31000-31999", PerWorkspace: 10}); s.Ports != want {
		t.Fatalf("Ports = %+v, want %+v", s.Ports, want)
	}
	first, last, ok := s.Ports.Bounds()
	if !ok || first != 31000 || last != 31999 {
		t.Fatalf("Bounds() = %d, %d, %v", first, last, ok)
	}
}

func TestABadPortsSettingIsRefusedWithWhatToDo(t *testing.T) {
	s := Default()
	s.Ports = Ports{Range: "20000-20004", PerWorkspace: 10}
	err := s.Validate()
	want := `ports.perWorkspace is 10, more than the 5 ports of ports.range "20000-20004": widen the range or give each workspace fewer ports`
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v, want %q", err, want)
	}
}
