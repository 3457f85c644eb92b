package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// loadDaemon is a tackled process of the load test.
type loadDaemon struct {
	socket string
	cmd    *exec.Cmd
}

func startLoadDaemon(t *testing.T, root string, settings string) *loadDaemon {
	t.Helper()
	cfg := filepath.Join(root, "config", "tackle")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &loadDaemon{socket: filepath.Join(root, "tackled.sock")}
	d.cmd = exec.Command(filepath.Join(binDir, "tackled"), "--socket", d.socket, "--state-dir", filepath.Join(root, "state"), "--log-level", "warn")
	if prof := os.Getenv("TACKLE_LOAD_MEMPROFILE"); prof != "" {
		d.cmd.Args = append(d.cmd.Args, "--memprofile", prof)
	}
	d.cmd.Env = []string{"HOME=" + root, "XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "PATH=" + os.Getenv("PATH")}
	d.cmd.Stderr = os.Stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
	})
	return d
}

func (d *loadDaemon) dial(t *testing.T, ctx context.Context) *client.Client {
	t.Helper()
	var c *client.Client
	var err error
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err = client.Dial(ctx, &client.Options{Socket: d.socket, NoAutostart: true, ClientName: "load"})
		if err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the daemon does not answer: %v", err)
		}
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fdList names the daemon's open descriptors (for a failure message).
func (d *loadDaemon) fdList() []string {
	dir := fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid)
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		target, _ := os.Readlink(filepath.Join(dir, e.Name()))
		out = append(out, e.Name()+"→"+target)
	}
	return out
}

// goroutines asks the daemon for its goroutine count on a connection of
// its own (closed after, so each measure counts the same).
func (d *loadDaemon) goroutines(t *testing.T, ctx context.Context) int {
	t.Helper()
	c, err := client.Dial(ctx, &client.Options{Socket: d.socket, NoAutostart: true, ClientName: "count"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.GetGoroutines())
}

func (d *loadDaemon) fds(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func (d *loadDaemon) rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestLoadTwentyClients: 20 clients × 200 calls on four sessions, mixing
// Read, Bash, an MCP echo and a Write whose permission another client
// answers. Every call gets exactly one result; every session's log has
// no gap and no duplicate; the daemon's descriptors come back to where
// they were and its RSS within 10 MB.
func TestLoadTwentyClients(t *testing.T) {
	const clients, calls, sessions = 20, 200, 4
	root := t.TempDir()
	ev := testpeers.Bin(t, "mcp-server-everything")
	d := startLoadDaemon(t, root, mustJSON(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Bash(echo *)", "mcp__ev__echo"}},
		"mcpServers":  map[string]any{"ev": map[string]any{"command": ev, "args": []string{"stdio"}}},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := d.dial(t, ctx)

	ids := make([]string, sessions)
	for i := range ids {
		dir := filepath.Join(root, fmt.Sprintf("proj%d", i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		resp, err := c.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = resp.GetSession().GetId()
	}
	// The MCP server is up for every session before the load starts.
	deadline := time.Now().Add(time.Minute)
	for _, id := range ids {
		for {
			resp, err := c.Service().ListMcpServers(ctx, &tacklev1.ListMcpServersRequest{SessionId: id})
			if err != nil {
				t.Fatal(err)
			}
			if s := resp.GetServers(); len(s) == 1 && s[0].GetState() == "connected" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the MCP server did not connect: %v", resp.GetServers())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// One answerer per session, on a client of its own, allows every
	// permission request it sees.
	ac := d.dial(t, ctx)
	actx, stopAnswer := context.WithCancel(ctx)
	defer stopAnswer()
	var answered sync.WaitGroup
	for _, id := range ids {
		s, err := ac.Attach(actx, tacklev1.Role_ROLE_CONTROLLER)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Subscribe(id, 0, true); err != nil {
			t.Fatal(err)
		}
		answered.Add(1)
		sid := id
		go func() {
			defer answered.Done()
			for m, err := range s.Messages() {
				if err != nil {
					return
				}
				if e := m.GetEvent(); e.GetType() == "permission_requested" {
					p := e.GetPermission()
					_ = s.Answer(&tacklev1.PermissionAnswer{SessionId: sid, RequestId: p.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE})
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the answerers' subscriptions are in place

	input := func(sess, client, call int) (name, in string) {
		dir := filepath.Join(root, fmt.Sprintf("proj%d", sess))
		switch call % 10 {
		case 0, 1, 2, 3:
			return "Read", mustJSON(map[string]any{"file_path": filepath.Join(dir, "small.txt")})
		case 4, 5, 6:
			return "Bash", mustJSON(map[string]any{"command": fmt.Sprintf("echo c%d-%d", client, call)})
		case 7, 8:
			return "mcp__ev__echo", mustJSON(map[string]any{"message": fmt.Sprintf("c%d-%d", client, call)})
		default:
			return "Write", mustJSON(map[string]any{"file_path": filepath.Join(dir, fmt.Sprintf("w%d-%d.txt", client, call)), "content": "x\n"})
		}
	}
	// A warm-up round of every kind of call pages in the daemon's code for
	// them: the baseline is a daemon that has done such calls before.
	warm, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	for si, id := range ids {
		if _, err := warm.Subscribe(id, 0, true); err != nil {
			t.Fatal(err)
		}
		for j := range 10 {
			cid := fmt.Sprintf("warm%d-%d", si, j)
			name, in := input(si, 1000+si, j)
			if err := warm.RunBatch(&tacklev1.RunBatch{SessionId: id, Ref: cid, Calls: []*tacklev1.ToolCall{{Id: cid, Name: name, InputJson: in}}}); err != nil {
				t.Fatal(err)
			}
			for {
				m, err := warm.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if e := m.GetEvent(); e.GetType() == "call_result" && e.GetCallId() == cid {
					break
				}
			}
		}
	}
	warm.Close()
	time.Sleep(6 * time.Second) // the daemon's idle trim (5 s) has run
	baseFDs, baseRSS := d.fds(t), d.rss(t)
	baseList := d.fdList()
	baseG := d.goroutines(t, ctx)

	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for ci := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := ci % sessions
			s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if _, err := s.Subscribe(ids[sess], 0, true); err != nil {
				errs <- err
				return
			}
			for j := range calls {
				id := fmt.Sprintf("c%d-%d", ci, j)
				name, in := input(sess, ci, j)
				if err := s.RunBatch(&tacklev1.RunBatch{SessionId: ids[sess], Ref: id, Calls: []*tacklev1.ToolCall{{Id: id, Name: name, InputJson: in}}}); err != nil {
					errs <- err
					return
				}
				for {
					m, err := s.Recv()
					if err != nil {
						errs <- fmt.Errorf("client %d, call %s: %w", ci, id, err)
						return
					}
					if e := m.GetEvent(); e.GetType() == "call_result" && e.GetCallId() == id {
						if r := e.GetResult(); r.GetStatus() != "completed" || r.GetIsError() {
							errs <- fmt.Errorf("%s %s: %s %v", name, id, r.GetStatus(), r.GetContent())
							return
						}
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	stopAnswer()
	answered.Wait()

	// Every session's log, replayed from the start: seqs 1..last without a
	// gap or a repeat, one result per call.
	results := map[string]int{}
	for si, id := range ids {
		sess, err := c.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		last := sess.GetLastSeq()
		s, err := c.Attach(ctx, tacklev1.Role_ROLE_OBSERVER)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Subscribe(id, 1, false); err != nil {
			t.Fatal(err)
		}
		want := uint64(1)
		for want <= last {
			m, err := s.Recv()
			if err != nil {
				t.Fatalf("session %d replay at seq %d of %d: %v", si, want, last, err)
			}
			e := m.GetEvent()
			if e == nil {
				continue
			}
			if e.GetSeq() != want {
				t.Fatalf("session %d: seq %d where %d was due", si, e.GetSeq(), want)
			}
			want++
			if e.GetType() == "call_result" {
				results[e.GetCallId()]++
			}
		}
		s.Close()
	}
	for ci := range clients {
		for j := range calls {
			if n := results[fmt.Sprintf("c%d-%d", ci, j)]; n != 1 {
				t.Errorf("call c%d-%d has %d results in the log", ci, j, n)
			}
		}
	}
	if len(results) != clients*calls+10*sessions {
		t.Errorf("%d distinct results, want %d", len(results), clients*calls+10*sessions)
	}

	// Streams closed, the daemon idle: descriptors back, RSS close.
	c.Close()
	ac.Close()
	var fds, gs int
	var rss int64
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		fds, rss, gs = d.fds(t), d.rss(t), d.goroutines(t, ctx)
		if (fds <= baseFDs && rss <= baseRSS+10<<20 && gs <= baseG) || time.Now().After(end) {
			break
		}
	}
	if gs > baseG {
		t.Errorf("%d goroutines after the load, %d before", gs, baseG)
	}
	if fds > baseFDs {
		t.Errorf("%d open descriptors after the load, %d before:\nbefore %v\nafter  %v", fds, baseFDs, baseList, d.fdList())
	}
	if rss > baseRSS+10<<20 {
		t.Errorf("RSS %d MB after the load, %d MB before", rss>>20, baseRSS>>20)
	}
	t.Logf("descriptors %d → %d, goroutines %d → %d, RSS %d → %d MB", baseFDs, fds, baseG, gs, baseRSS>>20, rss>>20)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Rss") {
				t.Log(l)
			}
		}
	}
}
