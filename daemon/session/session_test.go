package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

const childEnv = "TACKLE_SESSION_TEST_CHILD"

func TestMain(m *testing.M) {
	if db := os.Getenv(childEnv); db != "" {
		os.Exit(runChild(db))
	}
	goleak.VerifyTestMain(m)
}

// runChild is the process killed in TestSurvivesSIGKILL: it creates a
// session, appends events, reports them and waits to be killed.
func runChild(db string) int {
	st, err := store.Open(db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m := NewManager(st, nil)
	s, _, err := m.Create(context.Background(), CreateOptions{Cwd: os.TempDir(), Env: []string{"CHILD=1"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < 50; i++ {
		if _, err := s.Append(&event.Event{Type: event.Notice, Text: fmt.Sprint("event ", i)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	s.SetTodos(json.RawMessage(`[{"content":"survive"}]`))
	fmt.Printf("ready %s\n", s.ID())
	select {} // wait for SIGKILL
}

type fixture struct {
	dbPath, stateDir string
	st               *store.Store
	m                *Manager
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dbPath: filepath.Join(dir, "state.db"), stateDir: dir}
	f.open(t)
	return f
}

func (f *fixture) open(t *testing.T) {
	t.Helper()
	st, err := store.Open(f.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	f.st = st
	f.m = NewManager(st, &Options{StateDir: f.stateDir})
	t.Cleanup(f.close)
}

func (f *fixture) close() {
	if f.m != nil {
		f.m.Close()
		f.st.Close()
		f.m, f.st = nil, nil
	}
}

// reopen simulates a daemon restart.
func (f *fixture) reopen(t *testing.T) {
	f.close()
	f.open(t)
}

func TestCreateValidation(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		name string
		o    CreateOptions
		want string
	}{
		{"empty cwd", CreateOptions{}, "cwd is empty"},
		{"relative cwd", CreateOptions{Cwd: "rel/dir"}, "not an absolute path"},
		{"missing cwd", CreateOptions{Cwd: filepath.Join(dir, "nope")}, "no such file"},
		{"file cwd", CreateOptions{Cwd: file}, "not a directory"},
		{"bad mode", CreateOptions{Cwd: dir, PermissionMode: "yolo"}, `unknown permission mode "yolo"`},
		{"missing additional dir", CreateOptions{Cwd: dir, AdditionalDirs: []string{"nope"}}, "additional directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := f.m.Create(context.Background(), tt.o)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create(%+v) = %v; want ErrInvalid containing %q", tt.o, err, tt.want)
			}
		})
	}
	if n := f.m.Count(); n != 0 {
		t.Errorf("Count after failed creates = %d", n)
	}
}

func TestCreateAndInfo(t *testing.T) {
	f := newFixture(t)
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, "extra"), 0o700)
	s, created, err := f.m.Create(context.Background(), CreateOptions{Cwd: cwd + "/./", AdditionalDirs: []string{"extra"}, Env: []string{"FOO=bar"}})
	if err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	if !strings.HasPrefix(s.ID(), "s_") || len(s.ID()) != 18 {
		t.Errorf("ID = %q", s.ID())
	}
	i := s.Info()
	if i.Cwd != cwd || i.PermissionMode != "" || !cmp.Equal(i.Env, []string{"FOO=bar"}) || i.LastSeq != 0 {
		t.Errorf("Info = %+v", i)
	}
	if got := s.PermissionMode(); got != "" {
		t.Errorf("PermissionMode of a session created without one = %q, want \"\" (follows the settings)", got)
	}
	if loaded := f.m.Loaded(); len(loaded) != 1 || loaded[0] != s {
		t.Errorf("Loaded = %v, want just the new session", loaded)
	}
	if got, want := s.WorkingDirs(), []string{cwd, filepath.Join(cwd, "extra")}; !cmp.Equal(got, want) {
		t.Errorf("WorkingDirs = %v, want %v", got, want)
	}
	if got := s.Environ(); !cmp.Equal(got, []string{"FOO=bar"}) {
		t.Errorf("Environ = %v", got)
	}
	out := s.OutputDir()
	if out != filepath.Join(f.stateDir, "outputs", s.ID()) {
		t.Errorf("OutputDir = %q", out)
	}
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		t.Errorf("OutputDir not created: %v", err)
	}
	s2, err := f.m.Get(context.Background(), s.ID())
	if err != nil || s2 != s {
		t.Errorf("Get returned %p, %v; want the cached %p", s2, err, s)
	}
	if _, err := f.m.Get(context.Background(), "s_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown id: %v", err)
	}
}

func TestDefaultForCwdRace(t *testing.T) {
	f := newFixture(t)
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	// A second manager on the same database stands in for another process.
	other := NewManager(f.st, nil)
	defer other.Close()

	const n = 8
	var wg sync.WaitGroup
	ids := make([]string, n)
	createdCount := make([]bool, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, cwd := f.m, real
			if i%2 == 1 {
				m, cwd = other, link+"/"
			}
			s, created, err := m.Create(context.Background(), CreateOptions{Cwd: cwd, DefaultForCwd: true})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], createdCount[i] = s.ID(), created
		}()
	}
	wg.Wait()
	nCreated := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Errorf("default sessions differ: %v", ids)
			break
		}
		if createdCount[i] {
			nCreated++
		}
	}
	if nCreated != 1 {
		t.Errorf("%d creators reported created=true, want 1", nCreated)
	}
	// A non-default session for the same directory is separate.
	s, created, err := f.m.Create(context.Background(), CreateOptions{Cwd: real})
	if err != nil || !created || s.ID() == ids[0] {
		t.Errorf("non-default Create = %v, %v, %v", s, created, err)
	}
	// After a restart the default is found again.
	f.reopen(t)
	s, created, err = f.m.Create(context.Background(), CreateOptions{Cwd: link, DefaultForCwd: true})
	if err != nil || created || s.ID() != ids[0] {
		t.Errorf("default after restart = %v, %v, %v; want %s", s.ID(), created, err, ids[0])
	}
}

func TestAppendGaplessConcurrent(t *testing.T) {
	f := newFixture(t)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := s.Subscribe(1, false, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				in := &event.Event{Type: event.Notice, Text: fmt.Sprint(w, "/", i)}
				e, err := s.Append(in)
				if err != nil {
					t.Error(err)
					return
				}
				if e.SessionID != s.ID() || e.Seq == 0 || e.Time.IsZero() || in.Seq != 0 {
					t.Errorf("Append returned %+v (input changed: %+v)", e, in)
				}
			}
		}()
	}
	wg.Wait()
	for want := uint64(1); want <= writers*each; want++ {
		e := <-sub.C()
		if e.Seq != want {
			t.Fatalf("live event seq %d, want %d", e.Seq, want)
		}
	}
	stored, err := s.Events(context.Background(), 1)
	if err != nil || len(stored) != writers*each {
		t.Fatalf("stored %d events, %v", len(stored), err)
	}
	for i, e := range stored {
		if e.Seq != uint64(i+1) {
			t.Fatalf("stored[%d].Seq = %d", i, e.Seq)
		}
	}
	if got := s.Info().LastSeq; got != writers*each {
		t.Errorf("LastSeq = %d", got)
	}
}

// TestSubscribeAtomic subscribes while events are appended: replay and live
// events together must be exactly fromSeq..last, in order.
func TestSubscribeAtomic(t *testing.T) {
	f := newFixture(t)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		s.Append(&event.Event{Type: event.Notice})
	}
	const total = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 10; i < total; i++ {
			if _, err := s.Append(&event.Event{Type: event.Notice}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	type result struct {
		replay []*event.Event
		sub    *event.Subscription
	}
	var subs []result
	for i := 0; i < 5; i++ {
		replay, sub, err := s.Subscribe(5, false, total)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, result{replay, sub})
	}
	liveReplay, liveSub, err := s.Subscribe(1, true, total)
	if err != nil || liveReplay != nil {
		t.Fatalf("liveOnly Subscribe = %v, %v", liveReplay, err)
	}
	<-done
	for _, r := range subs {
		next := uint64(5)
		for _, e := range r.replay {
			if e.Seq != next {
				t.Fatalf("replay seq %d, want %d", e.Seq, next)
			}
			next++
		}
		for next <= total {
			e := <-r.sub.C()
			if e.Seq != next {
				t.Fatalf("live seq %d, want %d (replay had %d)", e.Seq, next, len(r.replay))
			}
			next++
		}
		r.sub.Close()
	}
	// The live-only subscriber starts after the subscribe point, without gaps.
	var prev uint64
	for len(liveSub.C()) > 0 {
		e := <-liveSub.C()
		if prev != 0 && e.Seq != prev+1 {
			t.Fatalf("live-only gap: %d after %d", e.Seq, prev)
		}
		prev = e.Seq
	}
	liveSub.Close()
}

func TestMutatorPersistsAndEmits(t *testing.T) {
	f := newFixture(t)
	cwd := t.TempDir()
	sub1 := filepath.Join(cwd, "sub")
	os.Mkdir(sub1, 0o700)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, _ := s.Subscribe(1, true, 10)
	defer sub.Close()

	var env tool.Env = s
	mod := tool.Modifier(func(m tool.Mutator) {
		m.SetCwd("sub")
		m.SetTodos(json.RawMessage(`[{"content":"a","status":"pending"}]`))
		m.RecordFile(tool.FileState{Path: filepath.Join(cwd, "x.go") + "/", Size: 3, Hash: "abc"})
	})
	s.Apply(mod)
	s.SetCwd(filepath.Join(cwd, "missing"))  // ignored, logged
	s.SetTodos(json.RawMessage(`{not json`)) // ignored, logged

	if env.Cwd() != sub1 {
		t.Errorf("Cwd = %q, want %q", env.Cwd(), sub1)
	}
	fs, ok := env.FileState(filepath.Join(cwd, ".", "x.go"))
	if !ok || fs.Hash != "abc" {
		t.Errorf("FileState = %+v, %v", fs, ok)
	}
	if got := env.WorkingDirs(); !cmp.Equal(got, []string{cwd}) {
		t.Errorf("WorkingDirs after cd = %q, want the root %q only", got, cwd)
	}
	var changes []event.SessionChange
	for i, typ := range []event.Type{event.SessionUpdated, event.TodosUpdated} { // read-state is stored, not announced
		e := <-sub.C()
		if e.Type != typ || e.Session == nil {
			t.Fatalf("event %d: %+v, want %s", i, e, typ)
		}
		changes = append(changes, *e.Session)
	}
	want := []event.SessionChange{
		{Cwd: sub1},
		{Todos: json.RawMessage(`[{"content":"a","status":"pending"}]`)},
	}
	if d := cmp.Diff(want, changes); d != "" {
		t.Errorf("session_updated events (-want +got):\n%s", d)
	}
	if err := s.SetPermissionMode("acceptEdits"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPermissionMode("nope"); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetPermissionMode(nope) = %v", err)
	}

	id := s.ID()
	f.reopen(t)
	s, err = f.m.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	i := s.Info()
	if i.Cwd != cwd || i.CurrentDir != sub1 || s.Cwd() != sub1 || i.PermissionMode != "acceptEdits" || string(i.Todos) != `[{"content":"a","status":"pending"}]` || i.FilesRead != 1 || i.LastSeq != 3 {
		t.Errorf("Info after restart = %+v", i)
	}
	if fs, ok := s.FileState(filepath.Join(cwd, "x.go")); !ok || fs.Size != 3 {
		t.Errorf("FileState after restart = %+v, %v", fs, ok)
	}
	// Sequence numbers continue after a restart.
	e, err := s.Append(&event.Event{Type: event.Notice})
	if err != nil || e.Seq != 4 {
		t.Errorf("Append after restart: seq %v, %v; want 4", e, err)
	}
}

// TestCdKeepsRoot: SetCwd moves only the current directory; the root
// stays the working directory and the key of the directory's default session.
func TestCdKeepsRoot(t *testing.T) {
	f := newFixture(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _, err := f.m.Create(ctx, CreateOptions{Cwd: root, DefaultForCwd: true})
	if err != nil {
		t.Fatal(err)
	}
	if i := s.Info(); i.Cwd != root || i.CurrentDir != root || s.Cwd() != root {
		t.Fatalf("new session: Info %+v, Cwd %q; want root and current dir %q", i, s.Cwd(), root)
	}
	for _, bad := range []string{filepath.Join(root, "missing"), "", filepath.Join(root, "file")} {
		os.WriteFile(filepath.Join(root, "file"), nil, 0o600)
		if err := s.ChangeCwd(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ChangeCwd(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.ChangeCwd("sub"); err != nil {
		t.Fatal(err)
	}
	if i := s.Info(); i.Cwd != root || i.CurrentDir != sub || s.Cwd() != sub || !cmp.Equal(s.WorkingDirs(), []string{root}) {
		t.Fatalf("after cd sub: Info %+v, WorkingDirs %q", i, s.WorkingDirs())
	}
	f.reopen(t)
	again, created, err := f.m.Create(ctx, CreateOptions{Cwd: root, DefaultForCwd: true})
	if err != nil || created || again.ID() != s.ID() {
		t.Fatalf("default session of the root after cd and restart: %v, created %v, %v", again, created, err)
	}
	if again.Cwd() != sub {
		t.Errorf("current dir after restart = %q, want %q", again.Cwd(), sub)
	}
	if err := again.ChangeCwd(".."); err != nil {
		t.Fatal(err)
	}
	if i := again.Info(); i.CurrentDir != root || again.Cwd() != root {
		t.Errorf("after cd ..: Info %+v", i)
	}
	list, err := f.m.List(ctx)
	if err != nil || len(list) != 1 || list[0].Cwd != root || list[0].CurrentDir != root {
		t.Errorf("List = %+v, %v", list, err)
	}
}

func TestListAndDelete(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		s, _, err := f.m.Create(ctx, CreateOptions{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
	}
	list, err := f.m.List(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("List = %v, %v", list, err)
	}
	for i := range list {
		if list[i].ID != ids[2-i] {
			t.Errorf("List not newest first: %v", list)
		}
	}
	s, _ := f.m.Get(ctx, ids[0])
	s.Append(&event.Event{Type: event.Notice})
	out := s.OutputDir()
	os.WriteFile(filepath.Join(out, "big.txt"), []byte("x"), 0o600)
	_, sub, _ := s.Subscribe(1, false, 10)
	if err := f.m.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	for range sub.C() {
		// drain: the replayed event was delivered before; the channel closes
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("outputs dir survives Delete: %v", err)
	}
	if _, err := s.Append(&event.Event{Type: event.Notice}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Append after Delete = %v", err)
	}
	if _, err := f.m.Get(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete = %v", err)
	}
	if err := f.m.Delete(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete twice = %v", err)
	}
	if n := f.m.Count(); n != 2 {
		t.Errorf("Count = %d", n)
	}
	// Deleting a session that is not loaded also works.
	f.reopen(t)
	if err := f.m.Delete(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
}

func TestSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	db := filepath.Join(t.TempDir(), "state.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+db)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("reading from child: %v", err)
	}
	id := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	st, err := store.Open(db)
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	defer st.Close()
	m := NewManager(st, nil)
	defer m.Close()
	s, err := m.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 51 || evs[0].Text != "event 0" || evs[49].Text != "event 49" || evs[50].Type != event.TodosUpdated {
		t.Fatalf("after SIGKILL: %d events", len(evs))
	}
	i := s.Info()
	if string(i.Todos) != `[{"content":"survive"}]` || !cmp.Equal(i.Env, []string{"CHILD=1"}) || i.LastSeq != 51 {
		t.Errorf("Info after SIGKILL = %+v", i)
	}
}
