package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tackle-agent/tackle/clients/client"
)

// buildBinaries builds tackled and tackle into dir; ldflags go to tackled.
func buildBinary(t *testing.T, out, pkg string, ldflags string) {
	t.Helper()
	args := []string{"build", "-o", out}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// TestAutostart runs the real binaries: tackle starts tackled on a fresh
// socket, reuses it, replaces it when the tackled binary changes while the
// daemon is idle, and stops it.
func TestAutostart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	bin := t.TempDir()
	tackled := filepath.Join(bin, "tackled")
	tackleBin := filepath.Join(bin, "tackle")
	buildBinary(t, tackled, "github.com/tackle-agent/tackle/daemon/cmd/tackled", "")
	buildBinary(t, tackleBin, "github.com/tackle-agent/tackle/clients/cli/cmd/tackle", "")

	root, err := os.MkdirTemp("", "tka")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	sock := filepath.Join(root, "run", "tackled.sock")
	environ := []string{
		"HOME=" + filepath.Join(root, "home"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"TACKLE_SOCKET=" + sock,
		"PATH=", // tackled must be found next to tackle
	}
	run := func(args ...string) result {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(tackleBin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = environ, &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("running tackle: %v", err)
		}
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}
	defer run("daemon", "stop")
	type status struct {
		Version string `json:"version"`
		BuildID string `json:"build_id"`
		PID     int    `json:"pid"`
		Socket  string `json:"socket"`
	}
	statusOf := func() status {
		t.Helper()
		r := run("status", "--json").mustCode(t, 0)
		var st status
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status is not JSON: %v\n%s", err, r.stdout)
		}
		return st
	}

	// Several clients at once on a fresh socket: one daemon.
	cmds := make([]*exec.Cmd, 3)
	outs := make([]*bytes.Buffer, 3)
	for i := range cmds {
		outs[i] = &bytes.Buffer{}
		cmds[i] = exec.Command(tackleBin, "status", "--json")
		cmds[i].Env, cmds[i].Stdout, cmds[i].Stderr = environ, outs[i], os.Stderr
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	pids := map[int]bool{}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("concurrent tackle status %d: %v", i, err)
		}
		var st status
		if err := json.Unmarshal(outs[i].Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		pids[st.PID] = true
	}
	if len(pids) != 1 {
		t.Fatalf("concurrent autostarts ran %d daemons: %v", len(pids), pids)
	}

	first := statusOf()
	wantID, err := client.BuildIDOf(tackled, "")
	if err != nil {
		t.Fatal(err)
	}
	if first.BuildID != wantID || first.Socket != sock || !pids[first.PID] {
		t.Errorf("status = %+v, want build %s on %s", first, wantID, sock)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v", fi, err)
	}

	// A new tackled binary: the idle daemon of the old build is replaced.
	buildBinary(t, tackled+".new", "github.com/tackle-agent/tackle/daemon/cmd/tackled", "-X main.Version=9.9.9-test")
	if err := os.Rename(tackled+".new", tackled); err != nil {
		t.Fatal(err)
	}
	second := statusOf()
	if second.PID == first.PID || second.BuildID == first.BuildID || second.Version != "9.9.9-test" {
		t.Errorf("after a rebuild: status = %+v, want a new daemon (old %+v)", second, first)
	}
	if again := statusOf(); again.PID != second.PID {
		t.Errorf("a daemon of the same build was restarted: %d, then %d", second.PID, again.PID)
	}

	run("daemon", "stop").mustCode(t, 0)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket after daemon stop: %v", err)
	}
	run("--no-autostart", "status").mustCode(t, 2)
	run("daemon", "stop").mustCode(t, 0)
}
