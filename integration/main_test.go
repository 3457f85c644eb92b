// Package integration runs the real tackled and tackle binaries, built once
// for the package, against a daemon on a real unix socket in a temp dir.
// Nothing is faked: the CLI auto-starts the daemon, tools touch real files.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var binDir string

func TestMain(m *testing.M) {
	if sock := os.Getenv(echoEnv); sock != "" {
		os.Exit(serveEcho(sock)) // this process is the echo server of BenchmarkEchoProcess
	}
	dir, err := os.MkdirTemp("", "tackle-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "../daemon/cmd/tackled", "../daemon/cmd/tackle-sandbox-exec", "../clients/cli/cmd/tackle")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build makes them
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building binaries:", err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	// Nothing the tests started in this process (clients, fake models,
	// MCP peers, readers of the binaries' output) outlives them.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is one isolated user: its own HOME, XDG dirs and socket.
type env struct {
	t       *testing.T
	root    string
	home    string
	project string
	socket  string
	vars    []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root, err := os.MkdirTemp("", "tk")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, root: root, home: filepath.Join(root, "home"), project: filepath.Join(root, "proj")}
	for _, d := range []string{e.home, e.project, filepath.Join(root, "run"), filepath.Join(root, "state"), filepath.Join(root, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.socket = filepath.Join(root, "run", "tackle", "tackled.sock")
	e.vars = []string{
		"HOME=" + e.home,
		"XDG_RUNTIME_DIR=" + filepath.Join(root, "run"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"PATH=" + os.Getenv("PATH"),
		"NO_COLOR=1",
	}
	t.Cleanup(func() {
		e.tackle("", "daemon", "stop")
		os.RemoveAll(root)
	})
	return e
}

type runResult struct {
	stdout, stderr string
	code           int
}

// tackle runs the CLI in the project dir with stdin and args.
func (e *env) tackle(stdin string, args ...string) runResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "tackle"), args...)
	cmd.Dir = e.project
	cmd.Env = e.vars
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running tackle %v: %v", args, err)
	}
	return runResult{out.String(), errb.String(), code}
}

// json runs tackle with --json and decodes stdout into v; it fails on exit code 2.
func (e *env) json(v any, stdin string, args ...string) runResult {
	e.t.Helper()
	r := e.tackle(stdin, append(args, "--json")...)
	if r.code == 2 {
		e.t.Fatalf("tackle %v: exit 2: %s", args, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		e.t.Fatalf("tackle %v: decoding %q: %v (stderr %s)", args, r.stdout, err, r.stderr)
	}
	return r
}

func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.project, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
