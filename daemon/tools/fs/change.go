package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tools/fs/internal/udiff"
)

// change is a file loaded for an edit, after the read-state rules passed.
type change struct {
	path   string      // the cleaned absolute path the model gave
	target string      // the real path written (symlinks resolved)
	exists bool        // the file existed when loaded
	info   fs.FileInfo // its info, when it exists
	old    []byte      // its content, when it exists
	crlf   bool        // every line break of old is "\r\n"
}

// text returns the old content with "\r\n" turned into "\n" for a CRLF file.
func (c *change) text() string {
	if c.crlf {
		return toLF(string(c.old))
	}
	return string(c.old)
}

// encode turns text edited in "\n" form back into the file's line endings.
func (c *change) encode(s string) []byte {
	if c.crlf {
		return []byte(toCRLF(s))
	}
	return []byte(s)
}

// loadOpts says what a tool requires of the file.
type loadOpts struct {
	mayCreate bool   // a missing file is fine (Write, Edit with empty old_string)
	needFull  bool   // the recorded read must be full (Write)
	missing   string // hint when the file is missing and may not be created
}

// load checks the read-state rules for path and loads the file.
func (o *Options) load(ctx context.Context, env tool.Env, filePath string, lo loadOpts) (*change, error) {
	p, err := absPath(env, filePath)
	if err != nil {
		return nil, err
	}
	c := &change{path: p, target: tool.RealPath(p)}
	f, err := os.Open(c.target)
	if errors.Is(err, fs.ErrNotExist) {
		if !lo.mayCreate {
			return nil, notExistError(env, p, lo.missing)
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link to a missing file; write to the target path instead, or remove the link with Bash first", p)
		}
		return c, nil
	}
	if err != nil {
		return nil, statError(env, p, err, "")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", p, err)
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory, not a file. Give the path of a file inside it (use Glob or Bash `ls` to list it)", p)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s); only regular files can be edited", p, fi.Mode().Type())
	case fi.Size() > o.MaxEditBytes:
		return nil, fmt.Errorf("%s is too large to edit here (%d bytes, the limit is %d). Use Bash (sed, patch) to change a file this large", p, fi.Size(), o.MaxEditBytes)
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, o.MaxEditBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", p, err)
	}
	if i := bytes.IndexByte(data[:min(len(data), sniffLen)], 0); i >= 0 {
		return nil, fmt.Errorf("%s is a binary file (it has a NUL byte at offset %d); these tools edit text files only", p, i)
	}
	st, ok := lookupState(env, p, c.target)
	if !ok {
		return nil, errors.New(msgNotRead + " (" + p + ")")
	}
	if lo.needFull && st.Partial {
		return nil, fmt.Errorf("%s has only been read in part (with offset/limit, or truncated). Read the whole file before overwriting it with Write, or use Edit or ReplaceLines to change part of it", p)
	}
	same, err := unchanged(ctx, st, fi, c.target, data)
	if err != nil {
		return nil, err
	}
	if !same {
		return nil, errors.New(msgModified + " (" + p + ")")
	}
	c.exists, c.info, c.old = true, fi, data
	c.crlf = isCRLF(data)
	return c, nil
}

// sniffLen is how much of a file is checked for NUL bytes to call it binary.
const sniffLen = 8 << 10

// isCRLF reports whether b has line breaks and every one of them is "\r\n".
func isCRLF(b []byte) bool {
	n := bytes.Count(b, []byte("\n"))
	return n > 0 && bytes.Count(b, []byte("\r\n")) == n
}

func toLF(s string) string   { return strings.ReplaceAll(s, "\r\n", "\n") }
func toCRLF(s string) string { return strings.ReplaceAll(toLF(s), "\n", "\r\n") }

// commit writes data to the change's file atomically and builds the result:
// a short text for the model (with a snippet when snippet is set), the
// unified diff as Display, and a Modifier recording the new full read-state.
func (o *Options) commit(ctx context.Context, c *change, data []byte, summary string, snippet bool) (*tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !c.exists {
		if err := os.MkdirAll(filepath.Dir(c.target), 0o755); err != nil {
			return tool.ErrorResult(fmt.Sprintf("creating the parent directories of %s: %v", c.path, err)), nil
		}
	}
	if err := writeAtomic(c.target, data, c.info); err != nil {
		return tool.ErrorResult(err.Error() + ". Nothing was changed."), nil
	}
	fi, err := os.Stat(c.target)
	if err != nil {
		return nil, fmt.Errorf("checking the written file %q: %w", c.target, err)
	}
	st := tool.FileState{Path: tool.RealPath(c.target), ModTime: fi.ModTime(), Size: fi.Size(), Hash: hashBytes(data)}

	oldName := c.path
	if !c.exists {
		oldName = "/dev/null"
	}
	script := udiff.Diff(udiff.Split(string(c.old)), udiff.Split(string(data)))
	hunks := udiff.Hunks(script, o.DiffContext)
	text := summary
	if snippet {
		text += " Here's the result of running `cat -n` on a snippet of the edited file:\n" + snippetOf(hunks)
	}
	return &tool.Result{
		Content:  []tool.Content{tool.Text(text)},
		Display:  capDisplay(udiff.Render(oldName, c.path, hunks), o.MaxDisplayBytes),
		Modifier: record(st),
	}, nil
}

// snippetMaxLines caps the snippet in an edit's text result.
const snippetMaxLines = 60

// snippetOf shows the new side of each hunk as `cat -n` lines.
func snippetOf(hunks []udiff.Hunk) string {
	var sb strings.Builder
	shown := 0
	for i, h := range hunks {
		if shown >= snippetMaxLines {
			fmt.Fprintf(&sb, "     …\t(%d more changed regions not shown; Read the file to see them)\n", len(hunks)-i)
			break
		}
		if i > 0 {
			sb.WriteString("     …\n")
		}
		n := h.NewStart
		for _, l := range h.Lines {
			if l.Op == udiff.Delete {
				continue
			}
			if shown >= snippetMaxLines {
				sb.WriteString("     …\t(snippet cut; Read the file to see the rest)\n")
				break
			}
			fmt.Fprintf(&sb, "%6d\t%s\n", n, cutLine(strings.TrimSuffix(strings.TrimSuffix(l.Text, "\n"), "\r"), 2000))
			n++
			shown++
		}
	}
	return sb.String()
}

// capDisplay cuts a diff over max bytes at a line boundary, with a note.
func capDisplay(d string, max int) string {
	if len(d) <= max {
		return d
	}
	cut := strings.LastIndexByte(d[:max], '\n') + 1
	return d[:cut] + fmt.Sprintf("... (diff truncated: %d more bytes)\n", len(d)-cut)
}

// writeAtomic writes data to a temporary file in the directory of p and
// renames it over p, so a reader sees the old or the new file, never a mix.
// The mode (and, where permitted, the owner) of an existing file is kept.
func writeAtomic(p string, data []byte, old fs.FileInfo) (err error) {
	dir, base := filepath.Split(p)
	tmp, err := os.CreateTemp(dir, "."+base+".tackle-*.tmp")
	if err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	mode := fs.FileMode(0o644)
	if old != nil {
		mode = old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if sys, ok := old.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
			_ = tmp.Chown(int(sys.Uid), int(sys.Gid)) // best effort: only root may give a file away
		}
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("writing file %q: setting mode: %w", p, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if err = os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable; not all file systems support it
		d.Close()
	}
	return nil
}
