package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// TestLocalSettingsOutOfGit: the file tackle mcp approve writes into a
// repository (.tackle/settings.local.json) is not something git commits.
func TestLocalSettingsOutOfGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	d := daemontest.Start(t)
	dir, _ := project(t)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"proj":{"command":"true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tackle(t, d, "", "mcp", "approve", "proj", "--cwd", dir).mustCode(t, 0)
	if _, err := os.Stat(filepath.Join(dir, ".tackle", "settings.local.json")); err != nil {
		t.Fatal(err)
	}
	if status := git("status", "--porcelain", "--untracked-files=all"); strings.Contains(status, ".tackle/") || !strings.Contains(status, ".mcp.json") {
		t.Errorf("git status after mcp approve:\n%s", status)
	}
}
