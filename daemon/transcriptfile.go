package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
)

// This file keeps each session's transcript in Claude Code's JSONL format
// (one line per message: type user|assistant, message {role, content},
// uuid, parentUuid, sessionId, cwd, timestamp), the file hook inputs name
// as transcript_path, so hooks written for Claude Code that read the
// transcript work. The session's event log stays the source of truth.

// transcripts appends the lines; it remembers each session's last uuid.
type transcripts struct {
	mu   sync.Mutex
	last map[string]string // by session id: the last line's uuid
}

func newTranscripts() *transcripts { return &transcripts{last: map[string]string{}} }

// add appends the message of a transcript event (prompt_started,
// assistant_message, tool_results, compacted) to the session's file.
func (t *transcripts) add(sess *session.Session, e *event.Event) {
	if len(e.Message) == 0 {
		return
	}
	typ := "user"
	if e.Type == event.AssistantMessage {
		typ = "assistant"
	}
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	var parent any
	if p := t.last[sess.ID()]; p != "" {
		parent = p
	}
	line, err := json.Marshal(map[string]any{
		"parentUuid": parent, "isSidechain": sess.Agent() != nil, "userType": "external", "cwd": sess.Cwd(),
		"sessionId": sess.ID(), "version": "tackle", "type": typ, "message": json.RawMessage(e.Message),
		"uuid": id, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return
	}
	path := sess.TranscriptPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err == nil {
		t.last[sess.ID()] = id
	}
}
