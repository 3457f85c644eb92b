package chat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
)

// This file is tackle chat's line history across runs: the lines a person
// sent, one JSON object per line in $XDG_STATE_HOME/tackle/chat-history.jsonl
// (0600), each with the directory it was typed in. A chat recalls the
// lines of its own directory, as Claude Code's history does per project.
// Answers to permission questions are not lines of the history.

const (
	// chatHistoryRead is how much of the file's end a chat reads.
	chatHistoryRead = 256 << 10
	// chatHistoryMax is the size past which an append first cuts the file
	// down to its last chatHistoryRead bytes.
	chatHistoryMax = 1 << 20
	// chatHistoryLines is how many lines a chat recalls at most.
	chatHistoryLines = 500
)

// chatHistory is the history file, seen from one directory.
type chatHistory struct {
	path string // "" when there is no state directory: nothing is kept
	cwd  string
}

type chatHistoryEntry struct {
	Cwd  string    `json:"cwd"`
	Text string    `json:"text"`
	Time time.Time `json:"time"`
}

func newChatHistory(a *cmdutil.App, cwd string) *chatHistory {
	state := a.Getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		home := a.Getenv("HOME")
		if home == "" || !filepath.IsAbs(home) {
			return &chatHistory{cwd: cwd}
		}
		state = filepath.Join(home, ".local", "state")
	}
	return &chatHistory{path: filepath.Join(state, "tackle", "chat-history.jsonl"), cwd: cwd}
}

// load returns the directory's lines, oldest first. A missing or broken
// file is an empty history (a broken line is skipped): the history is a
// convenience, never a reason for the chat not to start.
func (h *chatHistory) load() []string {
	if h.path == "" {
		return nil
	}
	b, err := readTail(h.path, chatHistoryRead)
	if err != nil {
		return nil
	}
	var lines []string
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var e chatHistoryEntry
		if json.Unmarshal(line, &e) != nil || e.Cwd != h.cwd || e.Text == "" {
			continue
		}
		if n := len(lines); n > 0 && lines[n-1] == e.Text {
			continue
		}
		lines = append(lines, e.Text)
	}
	if len(lines) > chatHistoryLines {
		lines = lines[len(lines)-chatHistoryLines:]
	}
	return lines
}

// add appends a line. It reports nothing: a history that cannot be written
// loses that line only.
func (h *chatHistory) add(text string) {
	if h.path == "" {
		return
	}
	line, err := json.Marshal(chatHistoryEntry{Cwd: h.cwd, Text: text, Time: time.Now().UTC()})
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return
	}
	if fi, err := os.Stat(h.path); err == nil && fi.Size() > chatHistoryMax {
		h.shrink()
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	// One write of a whole line: chats appending at once do not mix.
	f.Write(append(line, '\n'))
}

// shrink rewrites the file as its last chatHistoryRead bytes of whole
// lines (through a rename, so a reader sees the old file or the new one).
func (h *chatHistory) shrink() {
	b, err := readTail(h.path, chatHistoryRead)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.path), ".chat-history-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), h.path) != nil {
		os.Remove(tmp.Name())
	}
}

// readTail reads the last n bytes of a regular file, from the first whole
// line among them.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: os.ErrInvalid}
	}
	off := max(fi.Size()-n, 0)
	r := bufio.NewReader(io.NewSectionReader(f, off, fi.Size()-off))
	if off > 0 {
		if _, err := r.ReadBytes('\n'); err != nil {
			return nil, nil // no whole line in the tail
		}
	}
	return io.ReadAll(r)
}
