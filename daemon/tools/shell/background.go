package shell

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Why a background shell was killed.
const (
	killedByRequest  = "killed by request"
	killedByShutdown = "killed because its session was deleted or the daemon stopped"
	killedByLifetime = "killed because it reached its lifetime limit"
)

// Background shell statuses (event.ShellInfo.Status).
const (
	statusRunning = "running"
	statusExited  = "exited"
	statusKilled  = "killed"
)

// bgShell is one background shell. Its output goes straight from the
// processes to a file; the model reads it with a cursor, clients with offsets.
type bgShell struct {
	s         *Shells
	sessionID string
	id        string
	num       int
	command   string
	path      string
	started   time.Time
	lifetime  time.Duration
	proc      *process
	timer     *time.Timer
	ended     chan struct{} // closed once the shell and its group are gone and the state is final

	mu         sync.Mutex // guards the fields below
	status     string
	exitCode   int
	endedAt    time.Time
	killReason string
	finalBytes int64

	readMu sync.Mutex // serialises the model's reads; guards cursor
	cursor int64      // where the model's next BashOutput starts
}

// runBackground starts a background shell for a Bash call.
func (s *Shells) runBackground(call *tool.Call, in bashInput, sandboxed bool) (*tool.Result, error) {
	if err := becomeSubreaper(); err != nil {
		s.opts.Logger.Warn("becoming a child subreaper: orphans of commands will not be reaped", "error", err)
	}
	lifetime, clampNote := clampDuration(in.Timeout, s.opts.DefaultLifetime, s.opts.MaxLifetime, "lifetime")
	env := call.Env
	sid := env.SessionID()
	dir, root, reset := startDir(env)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return tool.ErrorResult("Cannot start a background shell: " + errClosed.Error()), nil
	}
	ss := s.sessions[sid]
	if ss == nil {
		ss = &sessionShells{byID: map[string]*bgShell{}}
		s.sessions[sid] = ss
	}
	ss.next++
	num := ss.next
	id := fmt.Sprintf("bash_%d", num)
	f, err := createOutputFile(env, id+"-*.log")
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	wr, err := s.command(env, in.Command, dir, shellEnv(env, dir), sandboxed)
	var p *process
	if err == nil {
		p, err = startProc(wr, dir, f, "bash")
	}
	f.Close()
	if err != nil {
		s.mu.Unlock()
		os.Remove(f.Name())
		return nil, err
	}
	sh := &bgShell{
		s: s, sessionID: sid, id: id, num: num, command: in.Command, path: f.Name(),
		started: time.Now().UTC(), lifetime: lifetime, proc: p, ended: make(chan struct{}), status: statusRunning,
	}
	ss.byID[id] = sh
	s.wg.Add(1)
	s.mu.Unlock()

	notified := make(chan struct{})
	go sh.run(notified)
	sh.timer = time.AfterFunc(lifetime, func() { sh.kill(killedByLifetime) })
	if s.opts.OnChange != nil {
		s.opts.OnChange(sid, sh.info())
	}
	close(notified)

	var sb strings.Builder
	fmt.Fprintf(&sb, "Command running in the background with ID: %s\n", id)
	fmt.Fprintf(&sb, "Its output (stdout and stderr) goes to %s.\n", sh.path)
	fmt.Fprintf(&sb, "Read new output with BashOutput {\"bash_id\": %q}; stop it with KillShell {\"shell_id\": %q}. It is killed after %s.", id, id, lifetime)
	if clampNote != "" {
		sb.WriteString("\n" + clampNote)
	}
	if reset {
		sb.WriteString("\nShell cwd was reset to " + root)
	}
	res := &tool.Result{Content: []tool.Content{tool.Text(sb.String())}, Display: id}
	if reset {
		res.Modifier = func(m tool.Mutator) { m.SetCwd(root) }
	}
	return res, nil
}

// run waits for the shell, cleans up its group and records the end.
func (sh *bgShell) run(notified <-chan struct{}) {
	defer sh.s.wg.Done()
	sh.proc.wait()
	sh.proc.cleanup(sh.s.opts.KillGrace)
	<-notified // sh.timer is set
	sh.timer.Stop()
	var size int64
	if fi, err := os.Stat(sh.path); err == nil {
		size = fi.Size()
	}
	sh.mu.Lock()
	sh.exitCode = sh.proc.exitCode()
	sh.endedAt = time.Now().UTC()
	sh.finalBytes = size
	sh.status = statusExited
	if sh.killReason != "" {
		sh.status = statusKilled
	}
	sh.mu.Unlock()
	close(sh.ended)
	if sh.s.opts.OnChange != nil {
		sh.s.opts.OnChange(sh.sessionID, sh.info())
	}
}

// kill kills the shell's process group unless it has ended, and returns
// once it is gone.
func (sh *bgShell) kill(reason string) {
	sh.mu.Lock()
	select {
	case <-sh.ended:
		sh.mu.Unlock()
		return
	default:
	}
	if sh.killReason == "" {
		sh.killReason = reason
	}
	sh.mu.Unlock()
	sh.proc.terminate(sh.s.opts.KillGrace)
}

// info returns the shell's state.
func (sh *bgShell) info() event.ShellInfo {
	sh.mu.Lock()
	i := event.ShellInfo{
		ID: sh.id, Command: sh.command, Status: sh.status, ExitCode: sh.exitCode,
		Started: sh.started, Ended: sh.endedAt, OutputPath: sh.path, OutputBytes: sh.finalBytes,
	}
	sh.mu.Unlock()
	if i.Status == statusRunning {
		if fi, err := os.Stat(sh.path); err == nil {
			i.OutputBytes = fi.Size()
		}
	}
	return i
}

func (sh *bgShell) reason() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.killReason
}

// readNew returns the output since the model's last read (only the lines
// matching filter, if set) and moves the cursor past it. While the shell
// runs, an unfinished last line (with a filter) or rune waits for the next
// read.
func (sh *bgShell) readNew(filter *regexp.Regexp, lim limits) (string, event.ShellInfo, error) {
	sh.readMu.Lock()
	defer sh.readMu.Unlock()
	info := sh.info() // first: an ended shell's output is all in the file
	f, err := os.Open(sh.path)
	if err != nil {
		return "", info, fmt.Errorf("reading output of shell %s: %w", sh.id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", info, fmt.Errorf("reading output of shell %s: %w", sh.id, err)
	}
	end := fi.Size()
	running := info.Status == statusRunning
	if sh.cursor > end {
		sh.cursor = end // the file was truncated under us
	}
	col := newCollector(lim, nil, nil)
	col.where = fmt.Sprintf("The whole output of the shell is in %s.", sh.path)
	var next int64
	if filter == nil {
		next, err = copyRange(col, f, sh.cursor, end, running)
	} else {
		next, err = filterRange(col, f, sh.cursor, end, running, filter)
	}
	if err != nil {
		return "", info, fmt.Errorf("reading output of shell %s: %w", sh.id, err)
	}
	sh.cursor = next
	return col.finish().Text, info, nil
}

// copyRange feeds [from, end) of f to col and returns where the next read
// starts: end, less an incomplete rune at the end while running. A range
// larger than the collector keeps in memory is read as its head and tail
// only (the collector counts the bytes between without seeing them).
func copyRange(col *collector, f *os.File, from, end int64, running bool) (int64, error) {
	n := end - from
	if n <= 0 {
		return from, nil
	}
	if n <= int64(col.lim.memMax) {
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return from, err
		}
		if running {
			k := incompleteSuffix(buf)
			buf = buf[:len(buf)-k]
		}
		col.write(buf)
		return from + int64(len(buf)), nil
	}
	head := make([]byte, col.lim.headMax)
	if _, err := f.ReadAt(head, from); err != nil && !errors.Is(err, io.EOF) {
		return from, err
	}
	tail := make([]byte, col.lim.tailMax)
	if _, err := f.ReadAt(tail, end-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return from, err
	}
	col.skip(head, n-int64(len(head))-int64(len(tail)), tail)
	return end, nil
}

// maxFilterLine is the part of a line a filter is matched against.
const maxFilterLine = 64 << 10

// filterRange feeds the lines of [from, end) that match re to col and
// returns where the next read starts: while running, at the start of an
// unfinished last line.
func filterRange(col *collector, f *os.File, from, end int64, running bool, re *regexp.Regexp) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, from, end-from), maxFilterLine)
	var line []byte   // the first maxFilterLine bytes of the current line
	var lineLen int64 // the current line's length so far
	consumed := from  // the offset after the last complete line
	emit := func() {
		text := bytes.TrimRight(line, "\r\n")
		if re.Match(text) {
			col.write(text)
			col.write([]byte{'\n'})
		}
		line, lineLen = line[:0], 0
	}
	for {
		chunk, err := br.ReadSlice('\n')
		lineLen += int64(len(chunk))
		if room := maxFilterLine - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == nil:
			consumed += lineLen
			emit()
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
		default:
			return from, err
		}
		break
	}
	if lineLen > 0 && !running {
		consumed += lineLen
		emit()
	}
	return consumed, nil
}

// describeShells lists a session's shell ids for messages.
func describeShells(ids []string) string {
	if len(ids) == 0 {
		return "This session has no background shells."
	}
	return "This session's shells: " + strings.Join(ids, ", ") + "."
}

// statusText is the state part of a BashOutput or KillShell result.
func statusText(info event.ShellInfo, reason string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "<status>%s</status>\n", info.Status)
	if info.Status != statusRunning {
		fmt.Fprintf(&sb, "<exit_code>%d</exit_code>\n", info.ExitCode)
		if reason != "" {
			fmt.Fprintf(&sb, "<note>%s</note>\n", reason)
		}
	}
	return sb.String()
}
