package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// shortDir is a temp dir with a path short enough for a unix socket.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tkc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testEnv is an environment in which no tackled can be found.
func testEnv(dir string) []string {
	return []string{"HOME=" + dir, "PATH="}
}

func TestDialNoDaemon(t *testing.T) {
	dir := shortDir(t)
	// A stale socket: bound, then closed without unlinking it.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	tests := []struct {
		name string
		path string
	}{
		{"missing socket", filepath.Join(dir, "none.sock")},
		{"missing directory", filepath.Join(dir, "no", "such", "dir.sock")},
		{"stale socket", stale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Dial(context.Background(), &Options{Socket: tt.path, NoAutostart: true, Env: testEnv(dir)})
			if !errors.Is(err, ErrNoDaemon) {
				t.Fatalf("Dial: got %v, want ErrNoDaemon", err)
			}
		})
	}
}

func TestDialNotASocket(t *testing.T) {
	dir := shortDir(t)
	p := filepath.Join(dir, "file")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(context.Background(), &Options{Socket: p, Env: testEnv(dir)})
	if err == nil || errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Dial: got %v, want a not-a-socket error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Fatalf("the file was changed: %q", b)
	}
}

func TestDialSocketOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a socket to another uid")
	}
	d := daemontest.Start(t)
	if err := os.Lchown(d.Socket(), 4242, 4242); err != nil {
		t.Fatal(err)
	}
	defer os.Lchown(d.Socket(), 0, 0)
	_, err := Dial(context.Background(), &Options{Socket: d.Socket(), Env: testEnv(t.TempDir())})
	if !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("Dial: got %v, want ErrPermissionDenied", err)
	}
}

func TestAutostartFailures(t *testing.T) {
	dir := shortDir(t)
	tests := []struct {
		name    string
		env     []string
		wantMsg string
	}{
		{"daemon exits at once", []string{"PATH=", "TACKLE_DAEMON=/bin/false"}, "exited with status 1"},
		{"no daemon binary", []string{"PATH="}, "finding tackled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(dir, "s", "tackled.sock")
			_, err := Dial(context.Background(), &Options{Socket: sock, Env: tt.env})
			if !errors.Is(err, ErrStartFailed) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Dial: got %v, want ErrStartFailed with %q", err, tt.wantMsg)
			}
		})
	}
}

func TestClientAgainstDaemon(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	c, err := Dial(ctx, &Options{Socket: d.Socket(), Env: testEnv(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Started() {
		t.Error("Started() = true for a running daemon")
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetPid() != int64(os.Getpid()) || st.GetBuildId() != "test-build" {
		t.Errorf("Status = %v", st)
	}

	if _, err := c.GetSession(ctx, "no-such-session"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession(unknown): got %v, want ErrNotFound", err)
	}
	cwd := t.TempDir()
	resp, err := c.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: cwd, Env: []string{"A=1"}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetId()

	s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Welcome().GetClientId() == "" {
		t.Error("welcome has no client id")
	}
	if _, err := s.Subscribe("no-such-session", 0, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("Subscribe(unknown): got %v, want ErrNotFound", err)
	}
	snap, err := s.Subscribe(id, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if snap.GetSession().GetCwd() != cwd {
		t.Errorf("snapshot cwd = %q, want %q", snap.GetSession().GetCwd(), cwd)
	}
	if err := s.RunBatch(&tacklev1.RunBatch{SessionId: id, Ref: "r1", Calls: []*tacklev1.ToolCall{{Id: "c1", Name: "NoSuchTool"}}}); err != nil {
		t.Fatal(err)
	}
	var got *tacklev1.ToolResult
	accepted := false
	for m, err := range s.Messages() {
		if err != nil {
			t.Fatal(err)
		}
		// The batch_accepted comes first (the daemon puts it in the
		// EventBatch of the turn's first events), then the events.
		if !accepted {
			if m.GetBatchAccepted().GetRef() != "r1" {
				t.Fatalf("the first message after RunBatch is %v, want its batch_accepted", m)
			}
			accepted = true
			continue
		}
		if r := m.GetEvent().GetResult(); r != nil {
			got = r
			break
		}
	}
	if got.GetId() != "c1" || got.GetStatus() != "invalid" || !got.GetIsError() {
		t.Errorf("result = %v, want c1 invalid is_error", got)
	}

	if err := c.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSession(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteSession twice: got %v, want ErrNotFound", err)
	}
}

func TestStop(t *testing.T) {
	ctx := context.Background()
	if err := Stop(ctx, filepath.Join(shortDir(t), "none.sock")); err != nil {
		t.Fatalf("Stop without a daemon: %v", err)
	}
	d := daemontest.Start(t)
	if err := Stop(ctx, d.Socket()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	<-d.Done()
	if _, err := os.Lstat(d.Socket()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Stop: %v", err)
	}
}

func TestBuildIDOf(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tackled")
	cache := filepath.Join(dir, "cache")
	write := func(content string) string {
		if err := os.WriteFile(exe, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(content))
		return hex.EncodeToString(sum[:])[:12]
	}
	want := write("one build")
	for range 2 { // computed, then from the cache
		got, err := BuildIDOf(exe, cache)
		if err != nil || got != want {
			t.Fatalf("BuildIDOf = %q, %v; want %q", got, err, want)
		}
	}
	want = write("another, longer build")
	if got, err := BuildIDOf(exe, cache); err != nil || got != want {
		t.Fatalf("BuildIDOf after a rebuild = %q, %v; want %q", got, err, want)
	}
	if _, err := BuildIDOf(filepath.Join(dir, "missing"), ""); err == nil {
		t.Error("BuildIDOf(missing) succeeded")
	}
}

func TestDefaultSocket(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"TACKLE_SOCKET", map[string]string{"TACKLE_SOCKET": "/x/s.sock", "XDG_RUNTIME_DIR": "/run/user/1"}, "/x/s.sock"},
		{"XDG_RUNTIME_DIR", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1"}, "/run/user/1/tackle/tackled.sock"},
		{"relative XDG_RUNTIME_DIR ignored", map[string]string{"XDG_RUNTIME_DIR": "rel", "TMPDIR": "/t"}, filepath.Join("/t", "tackle-"+strconv.Itoa(os.Getuid()), "tackled.sock")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultSocket(env(tt.env)); got != tt.want {
				t.Errorf("DefaultSocket = %q, want %q", got, tt.want)
			}
		})
	}
}
