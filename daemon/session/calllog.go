package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
)

// brokenResultWait bounds how long CallLogFailure waits for the commit of
// a call's events while the log is broken (see writer.broken), where a
// batch fails within retryBroken.
const brokenResultWait = time.Second

// callKey names a call of a session: its turn and its id.
type callKey struct{ turn, call string }

// callWrites are the writes of a call's events that are not known to be
// stored yet, and what is known of their loss. A call's events are those
// that carry its id (its states, progress, permission prompts, notices,
// result), from its first call_state on: the turn's own events (its start
// and end) are not counted, nor the prompts of a sub-agent's call shown
// in its parent session, whose result is never appended there.
type callWrites struct {
	pending []*write // in order; those done without error are pruned
	buf     [4]*write
	// lost is why an event of the call was lost, once that is known:
	// its write failed, or it was durable and could not be stored (so it
	// was not shown either).
	lost error
	// told: CallLogFailure returned lost, so the call's result says it.
	told bool
}

// prune drops the writes done from the head of pending, keeping the first
// error among them in lost. The writer finishes the writes it queued in
// their order (those it did not queue are never pending), so those done
// are a prefix. appendMu is held.
func (cw *callWrites) prune() {
	i := 0
	for ; i < len(cw.pending) && cw.pending[i].finished(); i++ {
		if err := cw.pending[i].err; err != nil && cw.lost == nil {
			cw.lost = err
		}
	}
	clear(cw.pending[:i]) // the array stays until append moves what is left
	cw.pending = cw.pending[i:]
}

// trackLocked records w, the write of c, an event published before it is
// stored, among the writes of its call. A call_result ends the call's
// record: its write is marked shown unless the result tells of a loss
// already (a later loss of it names the call). appendMu is held.
func (s *Session) trackLocked(c *event.Event, w *write) {
	k := callKey{c.TurnID, c.CallID}
	cw := s.calls[k]
	if c.Type == event.CallResult {
		w.shown = cw == nil || !cw.told
		delete(s.calls, k)
		return
	}
	if cw == nil {
		if c.Type != event.CallState {
			return
		}
		if s.calls == nil {
			s.calls = map[callKey]*callWrites{}
		}
		cw = &callWrites{}
		cw.pending = cw.buf[:0]
		s.calls[k] = cw
	}
	cw.prune()
	if w.finished() { // not queued (dropped): it is not in the writer's order
		if cw.lost == nil {
			cw.lost = w.err
		}
		return
	}
	cw.pending = append(cw.pending, w)
}

// durableLostLocked records that c, a durable event, could not be stored
// (err), if it is an event of a call; not if the manager is closing (the
// daemon stops), which is no failure of the log. appendMu is held.
func (s *Session) durableLostLocked(c *event.Event, err error) {
	if c.CallID == "" || errors.Is(err, errWriterClosed) {
		return
	}
	if cw := s.calls[callKey{c.TurnID, c.CallID}]; cw != nil && cw.lost == nil {
		cw.lost = err
	}
}

// CallLogFailure returns why events of call callID of turn turnID could
// not be stored, if that is known now; else nil. The pipeline asks it
// just before it appends the call's result, and a call it names ends
// with an error result saying the session log could not be written.
//
// What is guaranteed: the answer is about this call's own events only,
// never about others that failed meanwhile, so a call whose events are
// all stored is never told of a loss. An event of the call whose commit
// has not finished when the result is decided (the result's own, always;
// others lingering for company or retried while the database takes no
// writes) may be lost after the result is shown: then the notice of that
// loss (Manager.lost) names the call, and a call whose result already
// tells of a loss is not named again. Deciding and marking happen under
// appendMu, and the writer finishes a write (done) before it reports the
// loss, so each lost call is told one way or the other, never neither —
// as far as the telling itself is not lost: the notice may be lost with
// the next batch (the stored notice of the recovery lists seqs, not
// calls), and an event not queued, the queue being full, is told by the
// notice of its run of such events ("from seq N on"), which names none.
//
// While the log is broken (a write failed for good and none has
// succeeded since) it first waits, up to brokenResultWait, for the
// commit of the call's events: there a commit fails or succeeds fast, and
// the result can say which. Otherwise (the database healthy, or locked
// by another process and retried for up to retryLocked) it does not
// wait: a call's result is never held back by the database.
func (s *Session) CallLogFailure(turnID, callID string) error {
	k := callKey{turnID, callID}
	s.appendMu.Lock()
	var last *write
	if cw := s.calls[k]; cw != nil {
		cw.prune()
		if n := len(cw.pending); n > 0 && cw.lost == nil {
			last = cw.pending[n-1]
		}
	}
	s.appendMu.Unlock()
	if last != nil && s.m.w.isBroken() {
		timer := time.NewTimer(brokenResultWait)
		select {
		case <-last.done:
		case <-timer.C:
		}
		timer.Stop()
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	cw := s.calls[k]
	if cw == nil {
		return nil
	}
	cw.prune()
	if cw.lost != nil {
		cw.told = true
		return cw.lost
	}
	for _, it := range cw.pending {
		it.shown = true
	}
	return nil
}

// shownCalls returns the calls of ws, lost writes of s, whose results
// were shown without telling of their loss, as "id (Tool)", each once,
// in order.
func (s *Session) shownCalls(ws []*write) []string {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	var out []string
	seen := map[callKey]bool{}
	for _, it := range ws {
		e := it.w.Event
		k := callKey{e.TurnID, e.CallID}
		if !it.shown || e.CallID == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, fmt.Sprintf("%s (%s)", e.CallID, e.Tool))
	}
	return out
}
