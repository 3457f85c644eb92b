package fs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/fs"
)

func numbered(from int, lines ...string) string {
	var sb strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&sb, "%6d\t%s\n", from+i, l)
	}
	return sb.String()
}

func TestRead(t *testing.T) {
	small := &fs.Options{MaxLines: 5, MaxLineChars: 10}
	tiny := &fs.Options{MaxLines: 5, MaxLineChars: 10, MaxReadBytes: 60}
	type args = map[string]any
	tests := []struct {
		name    string
		opts    *fs.Options // small unless set
		content string      // written to "f" unless the input names another file
		input   args        // file_path defaults to "f"
		want    string      // exact text, if set
		has     []string    // substrings, if set
		err     bool
		partial bool
	}{
		{name: "numbered", content: "a\nb\n", want: numbered(1, "a", "b")},
		{name: "no final newline", content: "a\nb", want: numbered(1, "a", "b")},
		{name: "crlf shown without cr", content: "a\r\nb\r\n", want: numbered(1, "a", "b")},
		{name: "blank lines", content: "\n\nx\n", want: numbered(1, "", "", "x")},
		{name: "offset", content: "1\n2\n3\n4\n", input: args{"offset": 3}, want: numbered(3, "3", "4"), partial: true},
		{name: "offset zero reads all", content: "1\n2\n", input: args{"offset": 0}, want: numbered(1, "1", "2")},
		{name: "limit", content: "1\n2\n3\n4\n", input: args{"limit": 2}, want: numbered(1, "1", "2"), partial: true},
		{name: "offset and limit", content: "1\n2\n3\n4\n", input: args{"offset": 2, "limit": 2}, want: numbered(2, "2", "3"), partial: true},
		{name: "limit past end is full", content: "1\n2\n", input: args{"limit": 50}, want: numbered(1, "1", "2")},
		{name: "long line cut", content: "0123456789abcdef\nok\n",
			want: numbered(1, "0123456789 … [line truncated: 16 bytes in total]", "ok")},
		{name: "long multibyte line cut at characters", content: strings.Repeat("é", 12) + "\n",
			want: numbered(1, strings.Repeat("é", 10)+" … [line truncated: 24 bytes in total]")},
		{name: "invalid utf8 replaced", content: "a\xffb\n", want: numbered(1, "a\uFFFDb")},
		{name: "default line limit gives partial header", content: "1\n2\n3\n4\n5\n6\n7\n",
			has: []string{"[Truncated: PARTIAL view — the first 5 lines of", "offset=6", numbered(1, "1", "2", "3", "4", "5")}, partial: true},
		{name: "byte cap on whole file gives first page", opts: tiny, content: strings.Repeat("xxxxxxxxx\n", 5),
			has: []string{"[Truncated: PARTIAL view — the first 60 bytes", "lines 1-3", "offset=4", numbered(1, "xxxxxxxxx", "xxxxxxxxx", "xxxxxxxxx")}, partial: true},
		{name: "byte cap with explicit range is an error", opts: tiny, content: strings.Repeat("xxxxxxxxx\n", 20), input: args{"offset": 2, "limit": 10},
			has: []string{"too large", "offset=2 with limit=3"}, err: true},
		{name: "offset past end", content: "1\n2\n", input: args{"offset": 9}, has: []string{"has only 2 lines, fewer than offset 9"}},
		{name: "empty file", content: "", has: []string{"exists but is empty"}},
		{name: "binary", content: "abc\x00def", has: []string{"binary file", "NUL byte at offset 3", "Bash"}, err: true},
		{name: "missing", input: args{"file_path": "missing"}, has: []string{"File does not exist", "Current working directory"}, err: true},
		{name: "relative path", input: args{"file_path": "rel.txt"}, has: []string{"file_path must be an absolute path, not a relative path", "/rel.txt"}, err: true},
		{name: "directory", input: args{"file_path": "."}, has: []string{"is a directory", "Glob", "ls"}, err: true},
		{name: "extra property", content: "x", input: args{"bogus": 1}, err: true},
		{name: "negative offset", content: "x", input: args{"offset": -1}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tooltest.New(t)
			f := env.Path("f")
			writeFile(t, f, tt.content)
			input := args{"file_path": f}
			for k, v := range tt.input {
				input[k] = v
			}
			if fp, ok := tt.input["file_path"].(string); ok {
				switch fp {
				case "rel.txt":
				case ".":
					input["file_path"] = env.Cwd()
				default:
					input["file_path"] = env.Path(fp)
				}
			}
			opts := small
			if tt.opts != nil {
				opts = tt.opts
			}
			o := call(t, toolMap(opts), env, "Read", input)
			if o.Failed() != tt.err {
				t.Fatalf("failed = %v, want %v: %s", o.Failed(), tt.err, o.Text())
			}
			if tt.want != "" {
				if diff := cmp.Diff(tt.want, o.Text()); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
			for _, h := range tt.has {
				if !strings.Contains(o.Text(), h) {
					t.Errorf("result %q does not contain %q", o.Text(), h)
				}
			}
			if tt.err || strings.Contains(o.Text(), "fewer than offset") {
				if len(env.Files()) != 0 {
					t.Errorf("read-state recorded for a failed read: %v", env.Files())
				}
				return
			}
			st, ok := env.FileState(f)
			if !ok {
				t.Fatalf("no read-state recorded for %s", f)
			}
			if st.Partial != tt.partial {
				t.Errorf("Partial = %v, want %v", st.Partial, tt.partial)
			}
			if st.Hash == "" || st.Size != int64(len(tt.content)) {
				t.Errorf("state = %+v, want hash and size %d", st, len(tt.content))
			}
			if o.Access.Kind != tool.AccessRead || !o.Access.InsideWorkingDirs || o.Access.Paths[0] != f {
				t.Errorf("access = %+v", o.Access)
			}
		})
	}
}

func TestReadDefaults(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	f := env.Path("big.txt")
	var sb strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&sb, "line %d\n", i+1)
	}
	writeFile(t, f, sb.String())
	o := mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f}))
	if !strings.HasPrefix(o.Text(), "[Truncated: PARTIAL view") || !strings.Contains(o.Text(), "offset=2001") {
		t.Errorf("want a partial header naming offset=2001, got %.300q", o.Text())
	}
	if !strings.Contains(o.Text(), "  2000\tline 2000\n") || strings.Contains(o.Text(), "line 2001") {
		t.Error("want exactly lines 1-2000")
	}
	// Lines of 2500 characters are cut at 2000.
	writeFile(t, f, strings.Repeat("y", 2500)+"\n")
	o = mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f}))
	if !strings.Contains(o.Text(), strings.Repeat("y", 2000)+" … [line truncated: 2500 bytes in total]") {
		t.Errorf("long line not cut at 2000: %.100q", o.Text())
	}
	// 400 KiB in short lines: the first 256 KiB page and a header.
	sb.Reset()
	for i := 0; sb.Len() < 400<<10; i++ {
		fmt.Fprintf(&sb, "%0200d\n", i)
	}
	writeFile(t, f, sb.String())
	o = mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f}))
	if !strings.Contains(o.Text(), "the first 256 KiB") || len(o.Text()) > 256<<10+1000 {
		t.Errorf("want the first 256 KiB with a header; got %d bytes: %.200q", len(o.Text()), o.Text())
	}
	o = call(t, tools, env, "Read", map[string]any{"file_path": f, "offset": 1, "limit": 2000})
	mustFail(t, o, "too large", "more than 256 KiB")
}

func TestReadImages(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	enc := map[string]func(*bytes.Buffer) error{
		"image/png":  func(b *bytes.Buffer) error { return png.Encode(b, img) },
		"image/jpeg": func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) },
		"image/gif":  func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) },
		"image/webp": func(b *bytes.Buffer) error {
			// A minimal lossless WebP header; Read sniffs, it does not decode.
			b.WriteString("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
			return nil
		},
	}
	tools := toolMap(nil)
	for mime, encode := range enc {
		t.Run(mime, func(t *testing.T) {
			env := tooltest.New(t)
			var b bytes.Buffer
			if err := encode(&b); err != nil {
				t.Fatal(err)
			}
			// The name says nothing: content decides.
			f := env.Path("picture.bin")
			writeFile(t, f, b.String())
			o := mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f}))
			if len(o.Res.Content) != 1 || o.Res.Content[0].Type != "image" || o.Res.Content[0].MimeType != mime {
				t.Fatalf("content = %+v, want one %s image block", o.Res.Content, mime)
			}
			if !bytes.Equal(o.Res.Content[0].Data, b.Bytes()) {
				t.Error("image data differs from the file")
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		env := tooltest.New(t)
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		f := env.Path("a.png")
		writeFile(t, f, b.String())
		o := call(t, toolMap(&fs.Options{MaxImageBytes: 10}), env, "Read", map[string]any{"file_path": f})
		mustFail(t, o, "over the 10-byte limit")
	})
	t.Run("text named png", func(t *testing.T) {
		env := tooltest.New(t)
		f := env.Path("a.png")
		writeFile(t, f, "just text\n")
		o := mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f}))
		if o.Text() != numbered(1, "just text") {
			t.Errorf("got %q", o.Text())
		}
	})
}

func TestReadNotRegular(t *testing.T) {
	env := tooltest.New(t)
	fifo := env.Path("fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("mkfifo:", err)
	}
	mustFail(t, call(t, toolMap(nil), env, "Read", map[string]any{"file_path": fifo}), "not a regular file")
}

// TestReadFIFOAfterValidate swaps a FIFO (no writer) in for the file
// Validate saw: Run refuses it at once rather than waiting in open for a
// writer that never comes.
func TestReadFIFOAfterValidate(t *testing.T) {
	env := tooltest.New(t)
	p := env.Path("swapped")
	writeFile(t, p, "a file\n")
	tl := toolMap(nil)["Read"]
	c := &tool.Call{ID: "c1", Name: "Read", Input: json.RawMessage(fmt.Sprintf(`{"file_path":%q}`, p)), Env: env}
	if err := tl.Validate(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(p); err != nil {
		t.Skip("mkfifo:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := tl.Run(ctx, c, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "not a regular file") {
		t.Fatalf("Run on a FIFO: %+v", res)
	}
}

// TestReadHugeSparseFile reads a 2 GiB file with bounded memory.
func TestReadHugeSparseFile(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a 2 GiB sparse file")
	}
	env := tooltest.New(t)
	f := env.Path("huge.log")
	var sb strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&sb, "log line %d: something happened\n", i+1)
	}
	writeFile(t, f, sb.String())
	if err := os.Truncate(f, 2<<30); err != nil {
		t.Skip("cannot make a sparse file:", err)
	}
	tools := toolMap(nil)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	o := mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f}))
	o2 := mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": f, "offset": 2990, "limit": 5}))
	runtime.ReadMemStats(&after)

	t.Logf("two reads of a 2 GiB file: TotalAlloc +%d KiB, HeapInuse %d -> %d KiB",
		(after.TotalAlloc-before.TotalAlloc)>>10, before.HeapInuse>>10, after.HeapInuse>>10)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 50<<20 {
		t.Errorf("reading a 2 GiB file allocated %d MiB, want well under 100 MiB", grown>>20)
	}
	if after.HeapInuse > before.HeapInuse && after.HeapInuse-before.HeapInuse > 50<<20 {
		t.Errorf("heap in use grew by %d MiB", (after.HeapInuse-before.HeapInuse)>>20)
	}
	if !strings.Contains(o.Text(), "PARTIAL view") || !strings.Contains(o.Text(), "  2000\tlog line 2000: something happened\n") {
		t.Errorf("want the first 2000 lines with a partial header, got %.200q", o.Text())
	}
	if o2.Text() != numbered(2990, "log line 2990: something happened", "log line 2991: something happened",
		"log line 2992: something happened", "log line 2993: something happened", "log line 2994: something happened") {
		t.Errorf("offset read: got %q", o2.Text())
	}
	st, _ := env.FileState(f)
	if !st.Partial || st.Size != 2<<30 || st.Hash != "" {
		t.Errorf("state = %+v, want partial, 2 GiB, no hash (over the hash limit)", st)
	}
}

func TestReadCancelled(t *testing.T) {
	env := tooltest.New(t)
	f := env.Path("f")
	writeFile(t, f, strings.Repeat("line\n", 5000))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := &tool.Call{Name: "Read", Input: mustJSON(t, map[string]any{"file_path": f}), Env: env}
	if res, err := toolMap(nil)["Read"].Run(ctx, c, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context = %+v, %v; want context.Canceled", res, err)
	}
}

// TestReadConcurrent runs reads of one file in parallel, as the pipeline
// does with concurrency-safe calls (run it with -race).
func TestReadConcurrent(t *testing.T) {
	env := tooltest.New(t)
	f := env.Path("f")
	writeFile(t, f, "a\nb\n")
	tools := toolMap(nil)
	var wg sync.WaitGroup
	texts := make([]string, 10)
	for i := range texts {
		wg.Go(func() { texts[i] = call(t, tools, env, "Read", map[string]any{"file_path": f}).Text() })
	}
	wg.Wait()
	for _, got := range texts {
		if got != numbered(1, "a", "b") {
			t.Errorf("got %q", got)
		}
	}
}

// BenchmarkRead measures the tool's own work for a small file: Validate,
// CheckPermission, Run and the Modifier (the pipeline's schema check is not
// the tool's).
func BenchmarkRead(b *testing.B) {
	env := tooltest.New(b)
	f := env.Path("small.go")
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "\tx%d := compute(%d) // a typical line of source code\n", i, i)
	}
	writeFile(b, f, sb.String())
	rd := toolMap(nil)["Read"]
	c := &tool.Call{ID: "1", Name: "Read", Input: []byte(`{"file_path":"` + f + `"}`), Env: env}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := rd.Validate(ctx, c); err != nil {
			b.Fatal(err)
		}
		if _, err := rd.CheckPermission(ctx, c); err != nil {
			b.Fatal(err)
		}
		res, err := rd.Run(ctx, c, nil)
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
		res.Modifier(env)
	}
}

// TestReadSizeless reads a file whose stat gives no size (/proc): a file
// read whole in one read when its size is known is not cut short when the
// size is 0.
func TestReadSizeless(t *testing.T) {
	env := tooltest.New(t)
	fi, err := os.Stat("/proc/self/status")
	if err != nil || fi.Size() != 0 {
		t.Fatalf("/proc/self/status: %v, size %d (want a sizeless file)", err, fi.Size())
	}
	out := mustOK(t, call(t, toolMap(nil), env, "Read", map[string]any{"file_path": "/proc/self/status"})).Text()
	for _, want := range []string{"Name:", "Pid:", "VmRSS:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("Read of /proc/self/status lacks %q:\n%s", want, out)
		}
	}
}
