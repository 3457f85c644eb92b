package model

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxEventBytes bounds one server-sent event (a whole tool input in one
// chunk fits many times over); a larger one is an invalid stream.
const maxEventBytes = 16 << 20

var errEventTooLarge = errors.New("a server-sent event over 16 MiB")

// sseReader splits a text/event-stream body into events, per the WHATWG
// rules both APIs follow: "field: value" lines, one optional space after the
// colon, comment lines starting with ":", several data lines joined by "\n",
// an event dispatched at a blank line. Lines end in "\n" or "\r\n" (a lone
// "\r", which the format also allows, is sent by neither API and not
// recognised). Fields other than event and data are ignored.
//
// At the end of the body an event that lacks its blank line is still
// dispatched: both decoders parse its JSON, so a cut one fails there.
type sseReader struct {
	r    *bufio.Reader
	name []byte // the current event's name
	data []byte // its data lines, joined
	line []byte // scratch for a line longer than the bufio buffer
	has  bool   // the current event has a data field
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next event's name and data, valid until the following
// call; io.EOF at a clean end, or the body's read error.
func (s *sseReader) next() (name, data []byte, err error) {
	s.name, s.data, s.has = s.name[:0], s.data[:0], false
	for {
		line, err := s.readLine()
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
		eof := err == io.EOF
		switch {
		case len(line) == 0:
			if s.has {
				return s.name, s.data, nil // the blank line ends the event
			}
			s.name = s.name[:0] // an event without data is not dispatched
		case line[0] == ':':
			// a comment (keep-alive)
		default:
			field, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				field, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(field) {
			case "event":
				s.name = append(s.name[:0], value...)
			case "data":
				if s.has {
					s.data = append(s.data, '\n')
				}
				if len(s.data)+len(value) > maxEventBytes {
					return nil, nil, errEventTooLarge
				}
				s.data = append(s.data, value...)
				s.has = true
			}
		}
		if eof {
			if s.has {
				return s.name, s.data, nil
			}
			return nil, nil, io.EOF
		}
	}
}

// readLine returns one line without its line ending; at the end of the
// body the last, unterminated line comes with io.EOF.
func (s *sseReader) readLine() ([]byte, error) {
	b, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.line = append(s.line[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(s.line) > maxEventBytes {
				return nil, errEventTooLarge
			}
			b, err = s.r.ReadSlice('\n')
			s.line = append(s.line, b...)
		}
		b = s.line
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return b, err
}
