package daemon

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
)

// permissions.askTimeoutSeconds: unset or 0 is the daemon's default, a
// value is that many seconds, and one past what a Duration holds is the
// longest Duration rather than an overflow to a negative (an ask denied
// at once).
func TestAskTimeoutFromSettings(t *testing.T) {
	home := t.TempDir()
	project := t.TempDir()
	d := &Daemon{loader: config.NewLoader(&config.Options{Home: home, ConfigHome: filepath.Join(home, ".config"), ManagedPath: filepath.Join(home, "managed.json")})}
	settings := filepath.Join(home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"30", 30 * time.Second},
		{strconv.Itoa(maxAskTimeoutSeconds), time.Duration(maxAskTimeoutSeconds) * time.Second},
		{"99999999999999", time.Duration(maxAskTimeoutSeconds) * time.Second},
	} {
		body := `{}`
		if tt.value != "" {
			body = `{"permissions":{"askTimeoutSeconds":` + tt.value + `}}`
		}
		if err := os.WriteFile(settings, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// The loader notices a change by its stat; make each write a new one.
		future := time.Now().Add(time.Duration(len(tt.value)+1) * time.Hour)
		if err := os.Chtimes(settings, future, future); err != nil {
			t.Fatal(err)
		}
		if got := d.askTimeout(project); got != tt.want || got < 0 {
			t.Errorf("askTimeoutSeconds %q: %v, want %v", tt.value, got, tt.want)
		}
	}
}
