package chat

import (
	"io"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
)

// This file is tackle chat's terminal UI, a Bubble Tea program inline in
// the terminal (no alternate screen): finished lines of output are printed
// above it and stay in the scrollback; the program itself draws only the
// line being streamed, a status line and the input line (a bubbles
// textinput, with a history that Up and Down recall).
//
// The chat loop writes from its own goroutine through chatTUIWriter, which
// hands every piece to the program with Program.Send: one sender, so the
// program sees them in order (tea.Println as a command would run in a
// goroutine of its own, and two of them could swap). Send returns at once
// once the program has ended. The program hands the person's keys to the
// loop on a buffered channel without ever waiting for it, so neither side
// can block the other.

// The input line's prompts: for a prompt, and for an answer to a question.
const (
	chatPromptMark = "> "
	chatAskMark    = "? "
)

// chatTUIInputs is how many inputs may wait for the chat loop; more are
// dropped (a person does not type that far ahead of a loop that is busy
// for milliseconds at most).
const chatTUIInputs = 64

// Messages from the chat loop to the program.
type (
	tuiPartial string // the unfinished last line of the output
	tuiStatus  string
	tuiAsking  bool
	tuiBye     struct{}
)

// chatTUI implements chatUI on a terminal.
type chatTUI struct {
	p    *tea.Program
	w    *chatTUIWriter
	in   chan chatInput
	done chan struct{} // closed when the program has ended
	err  error         // its failure, set before done is closed
}

// startChatTUI starts the program on the app's stdin and stdout, which are
// terminals.
func startChatTUI(a *cmdutil.App, hist *chatHistory) *chatTUI {
	in := make(chan chatInput, chatTUIInputs)
	ti := textinput.New()
	ti.Prompt = chatPromptMark
	ti.Focus()
	m := &chatModel{in: in, input: ti, colour: a.Colour(a.Stdout), hist: hist, history: hist.load()}
	m.pos = len(m.history)
	u := &chatTUI{in: in, done: make(chan struct{})}
	// Ctrl-C is a key here (the terminal is raw): no signal handler.
	u.p = tea.NewProgram(m, tea.WithInput(a.Stdin), tea.WithOutput(a.Stdout),
		tea.WithEnvironment(a.Environ), tea.WithoutSignalHandler())
	u.w = &chatTUIWriter{p: u.p}
	go func() {
		_, u.err = u.p.Run()
		close(u.done)
	}()
	return u
}

func (u *chatTUI) text() io.Writer { return u.w }

func (u *chatTUI) info() io.Writer { return u.w }

func (u *chatTUI) inputs() <-chan chatInput { return u.in }

func (u *chatTUI) ended() <-chan struct{} { return u.done }

func (u *chatTUI) asking(b bool) { u.p.Send(tuiAsking(b)) }

func (u *chatTUI) status(s string) { u.p.Send(tuiStatus(s)) }

// close clears the program's lines, ends it and restores the terminal.
func (u *chatTUI) close() error {
	u.p.Send(tuiBye{})
	<-u.done
	return u.err
}

// chatTUIWriter prints finished lines above the program and shows the
// unfinished one in it. It is used by the chat loop's goroutine only.
type chatTUIWriter struct {
	p       *tea.Program
	partial string
}

func (w *chatTUIWriter) Write(b []byte) (int, error) {
	s := w.partial + string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		// Println's command, called here, is the message that prints.
		w.p.Send(tea.Println(s[:i])())
		s = s[i+1:]
	}
	w.partial = s
	w.p.Send(tuiPartial(s))
	return len(b), nil
}

// chatModel is the program's model. Bubble Tea calls it from one goroutine.
type chatModel struct {
	in      chan<- chatInput
	input   textinput.Model
	width   int
	partial string
	status  string
	asking  bool
	bye     bool
	colour  bool // the status line faint

	hist    *chatHistory // where sent lines are kept across runs
	history []string     // lines sent, oldest first
	pos     int          // the line recalled: len(history) when none
	draft   string       // what was typed before Up
}

func (m *chatModel) Init() tea.Cmd { return textinput.Blink }

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tuiPartial:
		m.partial = string(msg)
		return m, nil
	case tuiStatus:
		m.status = string(msg)
		return m, nil
	case tuiAsking:
		m.asking = bool(msg)
		m.input.Prompt = chatPromptMark
		if m.asking {
			m.input.Prompt = chatAskMark
		}
		return m, nil
	case tuiBye:
		m.bye = true
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width = msg.Width
		m.input.SetWidth(max(msg.Width-ansi.StringWidth(chatPromptMark)-1, 1))
	case tea.KeyPressMsg:
		switch msg.String() {
		case "enter":
			line := m.input.Value()
			m.input.Reset()
			if !m.asking {
				m.remember(line)
			}
			m.send(chatInput{kind: inputLine, text: line})
			return m, nil
		case "ctrl+c":
			m.input.Reset()
			m.pos = len(m.history)
			m.send(chatInput{kind: inputInterrupt})
			return m, nil
		case "ctrl+d":
			if m.input.Value() == "" {
				m.send(chatInput{kind: inputEOF})
				return m, nil
			}
		case "up":
			m.recall(-1)
			return m, nil
		case "down":
			m.recall(+1)
			return m, nil
		}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

func (m *chatModel) View() tea.View {
	if m.bye {
		return tea.NewView("")
	}
	var b strings.Builder
	if m.partial != "" {
		p := m.partial
		if m.width > 0 {
			// Bubble Tea cuts lines at the width: wrap as the terminal
			// wraps the line once it is printed.
			p = ansi.Hardwrap(p, m.width, true)
		}
		b.WriteString(p + "\n")
	}
	switch {
	case m.status != "" && m.colour:
		b.WriteString(ansiDim + m.status + render.AnsiReset + "\n")
	case m.status != "":
		b.WriteString(m.status + "\n")
	}
	b.WriteString(m.input.View())
	return tea.NewView(b.String())
}

// send hands an input to the chat loop without waiting.
func (m *chatModel) send(in chatInput) {
	select {
	case m.in <- in:
	default:
	}
}

// remember adds a sent line to the history.
func (m *chatModel) remember(line string) {
	if strings.TrimSpace(line) != "" && (len(m.history) == 0 || m.history[len(m.history)-1] != line) {
		m.history = append(m.history, line)
		m.hist.add(line)
	}
	m.pos, m.draft = len(m.history), ""
}

// recall moves through the history: step -1 is Up, +1 Down (back to the
// line being typed after the newest).
func (m *chatModel) recall(step int) {
	n := m.pos + step
	if n < 0 || n > len(m.history) {
		return
	}
	if m.pos == len(m.history) {
		m.draft = m.input.Value()
	}
	m.pos = n
	if n == len(m.history) {
		m.input.SetValue(m.draft)
	} else {
		m.input.SetValue(m.history[n])
	}
	m.input.CursorEnd()
}

// ansiDim is faint text (the status line).
const ansiDim = "\x1b[2m"
