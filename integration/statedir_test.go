package integration

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A state directory that already exists 0755 (made by hand, or by another
// tool) is made private by the daemon: after a real session with a large
// output, the directory and everything in it is 0700 or 0600, the log says
// what was changed, and another uid cannot read the database.
func TestStateDirIsPrivate(t *testing.T) {
	e := newEnv(t)
	stateHome := filepath.Join(e.root, "state")
	dir := filepath.Join(stateHome, "tackle")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	oldLog := filepath.Join(dir, "tackled.log")
	if err := os.WriteFile(oldLog, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Everything above the state directory is open, as a home directory
	// often is: only tackle's own modes keep another uid out.
	for p, mode := range map[string]fs.FileMode{e.root: 0o755, stateHome: 0o755, dir: 0o755, oldLog: 0o644} {
		if err := os.Chmod(p, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}

	var st statusJSON
	e.json(&st, "", "status")
	var res resultJSON
	// Over the result limit: the whole output goes to outputs/<session>/.
	r := e.json(&res, "", "call", "Bash", `{"command":"seq 1 100000"}`, "--permission-mode", "bypassPermissions")
	if r.code != 0 || res.Status != "completed" || !strings.Contains(res.text(), filepath.Join(dir, "outputs")) {
		t.Fatalf("Bash: code %d, status %s, %.300s (stderr %s)", r.code, res.Status, res.text(), r.stderr)
	}

	// The daemon runs: state.db, its -wal and -shm exist now.
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else if !fi.Mode().IsRegular() {
			t.Errorf("%s is %v, not a file or directory", p, fi.Mode())
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %04o, want %04o", p, fi.Mode().Perm(), want)
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"state.db", "state.db-wal", "state.db-shm", "tackled.log"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("expected %s: %v", name, err)
		}
	}
	var outputs int
	for _, f := range files {
		if strings.HasPrefix(f, filepath.Join(dir, "outputs")+string(filepath.Separator)) {
			outputs++
		}
	}
	if outputs == 0 {
		t.Errorf("no output file under %s/outputs: %q", dir, files)
	}

	log, err := os.ReadFile(oldLog)
	if err != nil {
		t.Fatal(err)
	}
	var tightened []string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, `"@message":"a state file was open to other users: made it private"`) {
			tightened = append(tightened, line)
		}
	}
	for _, want := range []string{`"path":"` + dir + `"`, `"path":"` + oldLog + `"`} {
		found := false
		for _, line := range tightened {
			found = found || strings.Contains(line, want)
		}
		if !found {
			t.Errorf("the log does not say the mode of %s was changed:\n%s", want, log)
		}
	}

	if testing.Verbose() {
		t.Logf("the log says:\n%s", strings.Join(tightened, "\n"))
	}

	t.Run("other uid", func(t *testing.T) {
		otherUIDCannotRead(t, e, dir, files)
	})
}

// otherUIDCannotRead runs cat as the user nobody on each of files (all in
// dir): each must fail with "Permission denied" — first as they are, then
// with dir opened for traversal (0711), so that the files' own modes are
// what refuses. A file nobody may read in stateHome shows the reader works.
func otherUIDCannotRead(t *testing.T, e *env, dir string, files []string) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot run a reader as another uid (the modes above are checked)")
	}
	uid, gid := uint32(65534), uint32(65534)
	if u, err := user.Lookup("nobody"); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			uid = uint32(n)
		}
		if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
			gid = uint32(n)
		}
	}
	cat := func(path string) (string, error) {
		cmd := exec.Command("cat", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	control := filepath.Join(filepath.Dir(dir), "readable.txt")
	if err := os.WriteFile(control, []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cat(control); err != nil || out != "ok" {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Skipf("uid %d cannot read a 0644 file in %s (%q): the temp dir is not reachable for it", uid, filepath.Dir(dir), out)
		}
		t.Skipf("cannot run a process as uid %d: %v", uid, err)
	}

	check := func(when string) {
		for _, f := range files {
			out, err := cat(f)
			if err == nil || !strings.Contains(out, "Permission denied") {
				t.Errorf("%s: uid %d reading %s: %v, %.100q; want permission denied", when, uid, f, err, out)
			}
		}
	}
	check("state dir 0700")
	chmodDirs(t, dir, 0o711)
	check("directories 0711, files as tackle made them")
	chmodDirs(t, dir, 0o700)
}

// chmodDirs changes every directory from dir down to mode.
func chmodDirs(t *testing.T, dir string, mode fs.FileMode) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, mode)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
