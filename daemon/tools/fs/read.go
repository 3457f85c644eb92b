package fs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed read.md
var readDescription string

var readSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The absolute path to the file to read"},
    "offset": {"type": "integer", "minimum": 0, "description": "The line number to start reading from (1-based). Only give it for files too large to read at once"},
    "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read. Only give it for files too large to read at once"}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`)

// Read is the Read tool: a text file as numbered lines, an image as an image
// block. It streams the file, so its memory use does not depend on the file's
// size. It is read-only and concurrency-safe.
type Read struct{ opts *Options }

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   *int   `json:"offset"`
	Limit    *int   `json:"limit"`
}

// Spec implements tool.Tool.
func (t *Read) Spec() tool.Spec {
	return tool.Spec{Name: "Read", Description: readDescription, InputSchema: readSchema}
}

// Attributes implements tool.Tool. Read caps its own output, so the
// pipeline's persistence threshold is set out of reach.
func (t *Read) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: tool.OriginBuiltin, MaxResultChars: 1 << 30}
}

// Validate implements tool.Tool: the path is absolute and names a file.
func (t *Read) Validate(ctx context.Context, call *tool.Call) error {
	var in readInput
	if err := decodeCall(call, &in); err != nil {
		return err
	}
	p, err := absPath(call.Env, in.FilePath)
	if err != nil {
		return err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return statError(call.Env, p, err, "Check the path, or use Glob to find the file.")
	}
	return checkReadable(p, fi)
}

func checkReadable(p string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a file. Read only reads files: use Glob (pattern \"*\" with path %q) or Bash `ls %s` to list a directory", p, p, p)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s); Read only reads regular files", p, fi.Mode().Type())
	}
	return nil
}

// CheckPermission implements tool.Tool.
func (t *Read) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	var in readInput
	if err := decodeCall(call, &in); err != nil {
		return tool.Access{}, err
	}
	return accessFor(call, tool.AccessRead, in.FilePath)
}

// Run implements tool.Tool.
func (t *Read) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	var in readInput
	if err := decodeCall(call, &in); err != nil {
		return nil, err
	}
	p, err := absPath(call.Env, in.FilePath)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	f, err := openRead(p)
	if err != nil {
		return tool.ErrorResult(statError(call.Env, p, err, "Check the path, or use Glob to find the file.").Error()), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading file %q: %w", p, err)
	}
	if err := checkReadable(p, fi); err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	r := &reader{opts: t.opts, path: p, real: realPathOf(call, p, fi), file: f, info: fi, hash: sha256.New()}
	r.br = readBufs.Get().(*bufio.Reader)
	r.br.Reset(io.TeeReader(&stickyEOF{r: ctxReader{ctx, f}, size: fi.Size()}, r.hash))
	defer func() {
		r.br.Reset(nil)
		readBufs.Put(r.br)
	}()
	return r.run(ctx, in)
}

// openRead opens p for reading as os.Open does, except that a FIFO put
// where Validate saw a file cannot hold the open (checkReadable then
// refuses it): it opens non-blocking, then makes the descriptor blocking
// again, so reads are what os.Open's are and os.NewFile does not offer the
// descriptor to the poller. Three system calls where os.Open made five (it
// set the descriptor non-blocking, failed to add it to the poller, and set
// it back).
func openRead(p string) (*os.File, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		// Status flags 0: O_NONBLOCK off (the open asked for no other).
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
			syscall.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		return os.NewFile(uintptr(fd), p), nil
	}
}

// stickyEOF is a reader that, once its reader said io.EOF, says it again
// without asking: bufio asks again after every EOF it returned, which
// for a small file meant two more read system calls per Read. It also says
// io.EOF without asking once size bytes (the file's size when it was
// opened; 0 when unknown, as for /proc files, which are read to their end)
// came: a small file is one read, not a read and an empty one. A file
// appended to after it was opened reads as it was then.
type stickyEOF struct {
	r         io.Reader
	eof       bool
	size, got int64
}

func (s *stickyEOF) Read(p []byte) (int, error) {
	if s.eof || (s.size > 0 && s.got >= s.size) {
		return 0, io.EOF
	}
	n, err := s.r.Read(p)
	s.got += int64(n)
	s.eof = err == io.EOF
	return n, err
}

// readBufs are the readers of Reads, reused: nothing a Read returns points
// into its buffer (lines and images are copied out).
var readBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// readBufSize holds the sniffed head (sniffLen) and is the unit a file is
// read in.
const readBufSize = 64 << 10

// reader is the state of one Read.
type reader struct {
	opts       *Options
	path, real string
	file       *os.File
	info       fs.FileInfo
	hash       hashWriter
	br         *bufio.Reader
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func (r *reader) state(partial bool, hash string) tool.FileState {
	return tool.FileState{Path: r.real, ModTime: r.info.ModTime(), Size: r.info.Size(), Hash: hash, Partial: partial}
}

func (r *reader) run(ctx context.Context, in readInput) (*tool.Result, error) {
	head, err := r.br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return readError(r.path, err)
	}
	if len(head) == 0 {
		return &tool.Result{
			Content:  []tool.Content{tool.Text(fmt.Sprintf("The file %s exists but is empty (0 bytes).", r.path))},
			Display:  "Read 0 lines (empty file)",
			Modifier: record(r.state(false, hashBytes(nil))),
		}, nil
	}
	if mime := imageType(head); mime != "" {
		return r.image(mime)
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return tool.ErrorResult(fmt.Sprintf("%s is a binary file (it has a NUL byte at offset %d), which Read cannot show. "+
			"Read shows text files and images (png, jpeg, gif, webp); for other files use Bash (e.g. `file`, `xxd | head`).", r.path, i)), nil
	}
	return r.text(ctx, in)
}

// image returns the whole file as an image block.
func (r *reader) image(mime string) (*tool.Result, error) {
	if r.info.Size() > r.opts.MaxImageBytes {
		return tool.ErrorResult(fmt.Sprintf("%s is an image of %d bytes, over the %d-byte limit for images in Read. "+
			"Make a smaller copy first (for example with Bash: `convert in.png -resize 50%% /tmp/small.png`) and Read that.",
			r.path, r.info.Size(), r.opts.MaxImageBytes)), nil
	}
	data, err := io.ReadAll(io.LimitReader(r.br, r.opts.MaxImageBytes+1))
	if err != nil {
		return readError(r.path, err)
	}
	return &tool.Result{
		Content:  []tool.Content{{Type: "image", MimeType: mime, Data: data}},
		Display:  fmt.Sprintf("Read image (%s, %d bytes)", mime, len(data)),
		Modifier: record(r.state(false, hashBytes(data))),
	}, nil
}

// imageType returns the mime type of an image file Read returns as an
// image block (png, jpeg, gif, webp), by its content: an extension alone (a
// text file named x.png) does not make a file an image, and an image with a
// wrong or no extension is still an image. The signatures are those
// net/http.DetectContentType knows these types by, and no signature it
// tries before them matches a head that starts with one of them, so the two
// agree (TestImageTypeIsDetectContentTypes); this asks four questions where
// that asks some forty, on every Read.
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 14 && string(head[:4]) == "RIFF" && string(head[8:14]) == "WEBPVP":
		return "image/webp"
	}
	return ""
}

// text streams the requested lines.
func (r *reader) text(ctx context.Context, in readInput) (*tool.Result, error) {
	start := 1
	if in.Offset != nil && *in.Offset > 1 {
		start = *in.Offset
	}
	limit := r.opts.MaxLines
	if in.Limit != nil {
		limit = *in.Limit
	}
	// An offset of 0 or 1 alone still reads the whole file.
	explicit := in.Limit != nil || start > 1
	maxLineBytes := r.opts.MaxLineChars*utf8.UTFMax + utf8.UTFMax

	var out []byte
	if r.info.Size() < int64(r.opts.MaxReadBytes) {
		out = make([]byte, 0, r.info.Size()+r.info.Size()/4+64)
	}
	lineNo, shown := 0, 0
	var capped bool // a whole-file read stopped at the byte cap
	var lb lineBuf
	for {
		if lineNo%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ok, err := lb.next(r.br, maxLineBytes, lineNo+1 >= start)
		if err != nil {
			return readError(r.path, err)
		}
		if !ok {
			break
		}
		lineNo++
		if lineNo < start {
			continue
		}
		mark := len(out)
		out = appendNumber(out, lineNo)
		out = lb.appendDisplay(out, r.opts.MaxLineChars)
		out = append(out, '\n')
		if len(out) > r.opts.MaxReadBytes {
			out = out[:mark]
			if explicit {
				return tool.ErrorResult(fmt.Sprintf("The requested range of %s is too large: the text from line %d through line %d is more than %s, "+
					"the most one Read returns. Read fewer lines at a time: offset=%d with limit=%d or less.",
					r.path, start, lineNo, sizeText(r.opts.MaxReadBytes), start, max(1, shown))), nil
			}
			capped = true
			break
		}
		shown++
		if shown >= limit {
			break
		}
	}
	if shown == 0 {
		return tool.TextResult(fmt.Sprintf("The file %s has only %d lines, fewer than offset %d: nothing to show. Use an offset from 1 to %d.",
			r.path, lineNo, start, max(1, lineNo))), nil
	}
	more := capped
	if !more {
		_, err := r.br.Peek(1)
		more = err == nil
	}
	partial := start > 1 || more

	// The hash covers the whole file: finish it unless the file is too big.
	hash := ""
	if !more {
		hash = hex.EncodeToString(r.hash.Sum(nil))
	} else if r.info.Size() <= r.opts.HashLimit {
		if _, err := io.Copy(r.hash, ctxReader{ctx, r.file}); err != nil {
			return readError(r.path, err)
		}
		hash = hex.EncodeToString(r.hash.Sum(nil))
	}

	text := string(out)
	if more && !explicit {
		why := fmt.Sprintf("the first %d lines", shown)
		if capped {
			why = "the first " + sizeText(r.opts.MaxReadBytes)
		}
		text = fmt.Sprintf("[Truncated: PARTIAL view — %s of %s (%d bytes) shown, lines 1-%d; the file continues. "+
			"To read more, call Read again with offset=%d and a limit (for example limit=%d).]\n",
			why, r.path, r.info.Size(), shown, shown+1, min(shown, r.opts.MaxLines)) + text
	}
	return &tool.Result{
		Content:  []tool.Content{tool.Text(text)},
		Display:  fmt.Sprintf("Read %d lines (%d-%d)", shown, start, start+shown-1),
		Modifier: record(r.state(partial, hash)),
	}, nil
}

func readError(p string, err error) (*tool.Result, error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	return tool.ErrorResult(fmt.Sprintf("reading %s: %v", p, err)), nil
}

// appendNumber appends a line number as `cat -n` shows it: "%6d\t".
func appendNumber(out []byte, n int) []byte {
	var num [20]byte
	d := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(d); i < 6; i++ {
		out = append(out, ' ')
	}
	out = append(out, d...)
	return append(out, '\t')
}

// lineBuf reads one line at a time from a bufio.Reader, keeping at most a
// bounded prefix of it: a file with one enormous line needs no more memory
// than a short one.
type lineBuf struct {
	buf   []byte // the kept prefix, without the line break
	total int    // the line's length in bytes, without the line break
}

// next reads the next line. keep says whether the caller wants its text
// (lines before the offset are only counted). It reports false at the end.
func (l *lineBuf) next(br *bufio.Reader, maxBytes int, keep bool) (bool, error) {
	l.buf, l.total = l.buf[:0], 0
	read := false
	for {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			read = true
			l.total += len(frag)
			if keep && len(l.buf) < maxBytes {
				l.buf = append(l.buf, frag[:min(len(frag), maxBytes-len(l.buf))]...)
			}
		}
		switch {
		case err == nil:
			l.total--
			if bytes.HasSuffix(l.buf, []byte("\n")) { // kept whole: drop the line break
				l.buf = bytes.TrimSuffix(l.buf[:len(l.buf)-1], []byte("\r"))
			}
			return true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return read, nil
		default:
			return false, err
		}
	}
}

// appendDisplay appends the line as valid UTF-8, cut at maxChars characters
// with a marker saying how long it was.
func (l *lineBuf) appendDisplay(out []byte, maxChars int) []byte {
	b := l.buf
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	cut := len(b)
	if cut > maxChars {
		for i, pos := 0, 0; pos < len(b); i++ {
			if i == maxChars {
				cut = pos
				break
			}
			_, size := utf8.DecodeRune(b[pos:])
			pos += size
		}
	}
	out = append(out, b[:cut]...)
	if cut < len(b) || l.total > len(l.buf)+1 {
		out = fmt.Appendf(out, " … [line truncated: %d bytes in total]", l.total)
	}
	return out
}

// cutLine returns s cut to at most n characters.
func cutLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// sizeText writes a byte count in KiB when it is a whole number of them.
func sizeText(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
