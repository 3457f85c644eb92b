package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
	"golang.org/x/sys/unix"
)

// chatEnv starts a daemon and the fake model, makes a project, and returns
// tackle's environment: the sessions it creates talk to the fake model.
func chatEnv(t *testing.T, script fakemodel.Script) (d *daemontest.Daemon, fm *fakemodel.Server, dir string, environ []string) {
	t.Helper()
	d = daemontest.Start(t)
	fm = fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test", Script: script})
	dir, _ = project(t)
	return d, fm, dir, env(d, "ANTHROPIC_BASE_URL="+fm.URL(), "ANTHROPIC_API_KEY=sk-test")
}

// Piped lines are prompts, each sent once the one before has ended: the
// answers in order on stdout, a line per tool call on stderr.
func TestChatPipedPrompts(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	file := filepath.Join(dir, "hello.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Reply(fakemodel.Text("Let me read it."), fakemodel.ToolUse("Read", map[string]any{"file_path": file})),
		fakemodel.Say("It says hello world."),
		fakemodel.Say("Nothing else."),
	))
	r := tackleEnv(t, environ, "what is in hello.txt?\nanything else?\n", "chat", "--cwd", dir).mustCode(t, 0)
	if want := "Let me read it.\nIt says hello world.\nNothing else.\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "● Read "+file+"\n") {
		t.Errorf("no tool line in stderr:\n%s", r.stderr)
	}
	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Content, "hello") {
		t.Errorf("the Read result: %+v", res)
	}
	// The second line went after the first prompt's end: the model saw the
	// whole first exchange before it.
	if got := reqs[2].LastUserText(); got != "anything else?" {
		t.Errorf("the second prompt's request ends with %q", got)
	}
	if n := len(reqs[2].Anthropic.Messages); n != 5 {
		t.Errorf("the second prompt's request has %d messages, want 5", n)
	}
}

// The slash commands: /model and /mode apply to the next prompts, /compact
// compacts, an unknown command is an error the chat goes on after, /help
// lists them, /clear goes on in a new session (the directory's default
// one stays).
func TestChatSlashCommands(t *testing.T) {
	d, fm, dir, environ := chatEnv(t, nil)
	target := filepath.Join(dir, "new.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Say("one"),
		fakemodel.Say("The summary: one was said."),
		fakemodel.Call("Write", map[string]any{"file_path": target, "content": "written by the agent\n"}),
		fakemodel.Say("written"),
		fakemodel.Say("fresh"),
	))
	in := strings.Join([]string{
		"/model claude-chat-test",
		"first",
		"/nosuch thing",
		"/compact",
		"/help",
		"/mode acceptEdits", // a Write in the project runs without asking
		"write it",
		"/clear",
		"fresh start",
	}, "\n") + "\n"
	r := tackleEnv(t, environ, in, "chat", "--cwd", dir).mustCode(t, 0)
	if want := "one\nwritten\nfresh\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q\nstderr:\n%s", r.stdout, want, r.stderr)
	}
	reqs := fm.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5\nstderr:\n%s", len(reqs), r.stderr)
	}
	for _, i := range []int{0, 2, 3} {
		if got := reqs[i].Model(); got != "claude-chat-test" {
			t.Errorf("request %d is for model %q, want claude-chat-test (/model)", i, got)
		}
	}
	// /compact: the next prompt starts from the summary.
	if b, _ := json.Marshal(reqs[2].Anthropic.Messages[0]); !strings.Contains(string(b), "The summary: one was said.") {
		t.Errorf("the request after /compact starts with %s", b)
	}
	if !strings.Contains(r.stderr, "compacted") {
		t.Errorf("stderr does not tell of the compaction:\n%s", r.stderr)
	}
	// /mode acceptEdits reached the prompt: the Write ran unasked.
	if b, err := os.ReadFile(target); err != nil || string(b) != "written by the agent\n" {
		t.Errorf("the Write under acceptEdits: %q, %v", b, err)
	}
	if res := reqs[3].ToolResults(); len(res) != 1 || res[0].IsError {
		t.Errorf("the Write's result: %+v", res)
	}
	if !strings.Contains(r.stderr, "tackle: /nosuch: ") || !strings.Contains(r.stderr, `no skill "nosuch"`) {
		t.Errorf("no error for /nosuch in stderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "/model [NAME]") {
		t.Errorf("/help printed no list:\n%s", r.stderr)
	}
	// /clear: a new conversation in a new session, not the directory's default.
	if got := reqs[4].Anthropic.Messages; len(got) != 1 || reqs[4].LastUserText() != "fresh start" {
		t.Errorf("the prompt after /clear: %d messages, %q", len(got), reqs[4].LastUserText())
	}
	m := regexp.MustCompile(`new session (\S+):`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("/clear named no session:\n%s", r.stderr)
	}
	def, err := d.Client().CreateSession(context.Background(), cmdutil.NewSessionRequest(dir, environ, true))
	if err != nil {
		t.Fatal(err)
	}
	if def.GetSession().GetId() == m[1] {
		t.Errorf("/clear made %s the directory's default session", m[1])
	}
}

// A second chat on the session shows the first one's prompt and its answer
// live; what it types meanwhile is queued, then answered; the first chat
// sees the second's prompt.
func TestChatSecondClient(t *testing.T) {
	d, fm, dir, environ := chatEnv(t, nil)
	hold := fakemodel.NewHold(4)
	fm.SetScript(fakemodel.Turns(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("I am thinking about it at length.")}, Chunk: 4, Hold: hold},
		fakemodel.Say("Second answer."),
	))
	resA := make(chan result, 1)
	go func() { resA <- tackleEnv(t, environ, "hello from A\n", "chat", "--cwd", dir) }()
	<-hold.Reached()

	cs, err := d.Client().CreateSession(context.Background(), cmdutil.NewSessionRequest(dir, environ, true))
	if err != nil {
		t.Fatal(err)
	}
	inB, typeB := io.Pipe()
	outB, errB := newLineBuffer(), newLineBuffer()
	codeB := make(chan int, 1)
	go func() {
		codeB <- Main(context.Background(), []string{"chat", "--session", cs.GetSession().GetId()}, inB, outB, errB, environ)
	}()
	errB.waitFor(t, "» hello from A  (from client ") // from B's snapshot: the running prompt
	if _, err := io.WriteString(typeB, "and me too\n"); err != nil {
		t.Fatal(err)
	}
	errB.waitFor(t, "queued: another prompt is running")
	hold.Release()
	outB.waitFor(t, "Second answer.\n")
	typeB.Close()
	if code := <-codeB; code != 0 {
		t.Errorf("the second chat ended with %d\nstdout:\n%s\nstderr:\n%s", code, outB.String(), errB.String())
	}
	a := (<-resA).mustCode(t, 0)
	if a.stdout != "I am thinking about it at length.\n" {
		t.Errorf("the first chat's stdout: %q", a.stdout)
	}
	if !strings.Contains(a.stderr, "queued: and me too  (from client ") {
		t.Errorf("the first chat did not show the queued prompt:\n%s", a.stderr)
	}
	// B saw A's answer whole (what had streamed before it joined, then the
	// rest), then its own.
	if got, want := outB.String(), "I am thinking about it at length.\nSecond answer.\n"; got != want {
		t.Errorf("the second chat's stdout %q, want %q", got, want)
	}
	if got := fm.Requests()[1].LastUserText(); got != "and me too" {
		t.Errorf("the queued prompt's request ends with %q", got)
	}
}

// TestChatHelperProcess is tackle in a child process, for TestChatTerminal:
// the arguments follow "--".
func TestChatHelperProcess(t *testing.T) {
	if os.Getenv("TACKLE_CHAT_HELPER") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, args, os.Stdin, os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// termChat is tackle chat in a child process on a pseudo-terminal.
type termChat struct {
	t      *testing.T
	master *os.File
	out    *lineBuffer
	exited chan struct{} // closed once the child has exited
	err    error         // its exit, set before exited is closed
}

// startTermChat runs tackle with args on a new 120×40 pseudo-terminal.
func startTermChat(t *testing.T, environ []string, args ...string) *termChat {
	t.Helper()
	return startTerm(t, environ, nil, args...)
}

// startTerm runs tackle with args on a new 120×40 pseudo-terminal, its
// controlling terminal; stdin, if not nil, replaces the terminal as its
// standard input (a pipe, as in `echo … | tackle call X -`).
func startTerm(t *testing.T, environ []string, stdin io.Reader, args ...string) *termChat {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n uint32
	rc, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ioErr error
	rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr != nil { // unlock
			return
		}
		if n, ioErr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN); ioErr != nil {
			return
		}
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120})
	})
	if ioErr != nil {
		master.Close()
		t.Fatalf("setting up the pseudo-terminal: %v", ioErr)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestChatHelperProcess$", "--"}, args...)...)
	cmd.Env = append(environ, "TACKLE_CHAT_HELPER=1", "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if stdin != nil {
		// The terminal is fd 3 in the child, and its controlling terminal.
		cmd.Stdin, cmd.ExtraFiles = stdin, []*os.File{slave}
		cmd.SysProcAttr.Ctty = 3
	}
	if err := cmd.Start(); err != nil {
		slave.Close()
		master.Close()
		t.Fatal(err)
	}
	slave.Close()
	tc := &termChat{t: t, master: master, out: newLineBuffer(), exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Until the child and its terminal are gone. It answers no
		// query: the chat must not wait for one.
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				tc.out.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		tc.err = cmd.Wait()
		close(tc.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-tc.exited:
		default:
			cmd.Process.Kill()
			<-tc.exited
		}
		master.Close()
		<-copied
	})
	return tc
}

// keys types on the terminal.
func (tc *termChat) keys(s string) {
	tc.t.Helper()
	if _, err := io.WriteString(tc.master, s); err != nil {
		tc.t.Fatalf("typing %q: %v", s, err)
	}
}

// wait waits for the child to exit and returns its error. The timeout
// only guards against a hung test.
func (tc *termChat) wait() error {
	tc.t.Helper()
	select {
	case <-tc.exited:
		return tc.err
	case <-time.After(30 * time.Second):
		tc.t.Fatalf("tackle chat did not exit; its terminal:\n%s", tc.out.String())
		return nil
	}
}

// On a terminal: Ctrl-C cancels the running prompt, Up recalls the last
// line, a permission request is answered inline, Ctrl-C twice leaves.
func TestChatTerminal(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	target := filepath.Join(dir, "from-the-terminal.txt")
	hold := fakemodel.NewHold(4)
	fm.SetScript(fakemodel.Turns(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("A long answer that is never finished")}, Chunk: 4, Hold: hold},
		fakemodel.Call("Write", map[string]any{"file_path": target, "content": "yes\n"}),
		fakemodel.Say("Wrote it."),
		fakemodel.Say("Once more."),
	))
	tc := startTermChat(t, environ, "chat", "--cwd", dir)
	tc.out.waitFor(t, "Ctrl-D leaves.")

	tc.keys("please write a file\r")
	<-hold.Reached()
	tc.keys("\x03") // Ctrl-C
	tc.out.waitFor(t, "cancelling the prompt")
	tc.out.waitFor(t, "(cancelled)")
	if o, err := fm.WaitDone(context.Background(), 0); err != nil || !o.ClientGone {
		t.Errorf("the first request: %+v, %v (want it aborted)", o, err)
	}

	tc.keys("\x1b[A") // Up: the line again
	tc.keys("\r")
	tc.out.waitFor(t, "Answer [y/a/n/f, default n]:") // the renderer drops trailing blanks
	tc.keys("y\r")
	tc.out.waitFor(t, "Wrote it.")
	if b, err := os.ReadFile(target); err != nil || string(b) != "yes\n" {
		t.Errorf("the allowed Write: %q, %v", b, err)
	}
	// The recalled line went again: the conversation has it twice (two
	// user messages, or one of two blocks when the cancelled answer had
	// no text yet).
	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if b, _ := json.Marshal(reqs[1].Anthropic.Messages); strings.Count(string(b), `"please write a file"`) != 2 {
		t.Errorf("the request after Up and Enter: %s", b)
	}

	tc.keys("\x03\x03") // Ctrl-C twice
	if err := tc.wait(); err != nil {
		t.Errorf("tackle chat: %v\n%s", err, tc.out.String())
	}

	// The next chat in that directory recalls the line (sent once more:
	// the history keeps a line sent twice in a row once).
	tc = startTermChat(t, environ, "chat", "--cwd", dir)
	tc.out.waitFor(t, "Ctrl-D leaves.")
	tc.keys("\x1b[A\x1b[A\r") // Up twice: still that line, the oldest
	tc.out.waitFor(t, "Once more.")
	reqs = fm.Requests()
	if b, _ := json.Marshal(reqs[len(reqs)-1].Anthropic.Messages); strings.Count(string(b), `"please write a file"`) != 3 {
		t.Errorf("the request after the next chat's Up and Enter: %s", b)
	}
	tc.keys("\x04") // Ctrl-D
	if err := tc.wait(); err != nil {
		t.Errorf("tackle chat: %v\n%s", err, tc.out.String())
	}
	home := ""
	for _, kv := range environ {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = h
		}
	}
	hist := filepath.Join(home, ".local", "state", "tackle", "chat-history.jsonl")
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the history file: %v, %v (want mode 0600)", fi, err)
	}
}

// A prompt another client sent (here a script's Prompt call, without a
// client id) shows with its text, and its answer streams.
func TestChatShowsOtherClientsPrompts(t *testing.T) {
	d, fm, dir, environ := chatEnv(t, fakemodel.Turns(fakemodel.Say("Hello, script.")))
	cs, err := d.Client().CreateSession(context.Background(), cmdutil.NewSessionRequest(dir, environ, true))
	if err != nil {
		t.Fatal(err)
	}
	in, typing := io.Pipe()
	out, errb := newLineBuffer(), newLineBuffer()
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"chat", "--session", cs.GetSession().GetId()}, in, out, errb, environ)
	}()
	// The chat is subscribed once it answers a line (an unknown command).
	io.WriteString(typing, "/ping\n")
	errb.waitFor(t, "tackle: /ping: ")
	if _, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: cs.GetSession().GetId(), Text: "from a script"}); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "Hello, script.\n")
	typing.Close()
	if c := <-code; c != 0 {
		t.Errorf("exit %d\n%s", c, errb.String())
	}
	if !strings.Contains(errb.String(), "» from a script  (from another client)") {
		t.Errorf("the other client's prompt is not shown:\n%s", errb.String())
	}
	if n := len(fm.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}
