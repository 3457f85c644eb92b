package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// result is one in-process run of tackle.
type result struct {
	code           int
	stdout, stderr string
}

// env is the environment of tackle in tests: the daemon's socket and home,
// and no PATH, so that no installed tackled is found or compared with.
func env(d *daemontest.Daemon, extra ...string) []string {
	return append([]string{"TACKLE_SOCKET=" + d.Socket(), "HOME=" + d.Home(), "PATH="}, extra...)
}

// tackle runs the command in-process against d.
func tackle(t *testing.T, d *daemontest.Daemon, stdin string, args ...string) result {
	t.Helper()
	return tackleEnv(t, env(d), stdin, args...)
}

func tackleEnv(t *testing.T, environ []string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb, environ)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustCode fails the test unless r ended with want.
func (r result) mustCode(t *testing.T, want int) result {
	t.Helper()
	if r.code != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, want, r.stdout, r.stderr)
	}
	return r
}

// volatile are JSON keys whose values change from run to run; normalize
// replaces them with a placeholder naming the key.
var volatile = map[string]bool{
	"id": true, "pid": true, "uptime_seconds": true, "rss_bytes": true, "socket": true,
	"created_at": true, "updated_at": true, "time": true, "duration_ms": true,
	"turn_id": true, "call_id": true, "session_id": true, "request_id": true,
	"client_id": true, "deadline": true, "started": true, "ended": true, "output_path": true,
	"input_sha256": true, "client_pid": true, "client_uid": true,
}

// normalize makes JSON text comparable with a golden file: volatile values
// become "<key>" and the strings in repl are replaced by their keys.
func normalize(t *testing.T, text string, repl map[string]string) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, text)
	}
	v = normalizeValue(v, repl)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func normalizeValue(v any, repl map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if volatile[k] {
				if s, ok := val.(string); ok && s == "" {
					continue
				}
				x[k] = "<" + k + ">"
				continue
			}
			x[k] = normalizeValue(val, repl)
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalizeValue(x[i], repl)
		}
		return x
	case string:
		keys := make([]string, 0, len(repl))
		for k := range repl {
			keys = append(keys, k)
		}
		// Longest first, so a path is replaced before its prefix.
		sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
		for _, k := range keys {
			x = strings.ReplaceAll(x, k, repl[k])
		}
		return x
	}
	return v
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// lineBuffer is an io.Writer whose content a test can wait on.
type lineBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // gets a token after each write
}

func newLineBuffer() *lineBuffer { return &lineBuffer{changed: make(chan struct{}, 1)} }

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer contains s. The timeout only guards
// against a hung test.
func (b *lineBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for !strings.Contains(b.String(), s) {
		select {
		case <-b.changed:
		case <-guard.C:
			t.Fatalf("timed out waiting for %q in:\n%s", s, b.String())
		}
	}
}

// waitForMatch waits until the buffer matches re. The timeout only guards
// against a hung test.
func (b *lineBuffer) waitForMatch(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for !re.MatchString(b.String()) {
		select {
		case <-b.changed:
		case <-guard.C:
			t.Fatalf("timed out waiting for %v in:\n%s", re, b.String())
		}
	}
}
