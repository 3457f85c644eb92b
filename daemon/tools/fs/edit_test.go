package fs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

func ptr(s string) *string { return &s }

type args = map[string]any

func edits(pairs ...any) []map[string]any {
	var out []map[string]any
	for i := 0; i < len(pairs); i += 3 {
		e := map[string]any{"old_string": pairs[i], "new_string": pairs[i+1]}
		if pairs[i+2] == true {
			e["replace_all"] = true
		}
		out = append(out, e)
	}
	return out
}

// TestEditingRules runs every editing tool against real files: the file as it
// was, how it was read, the input, then the file as it must be, or the
// error (and the file untouched).
func TestEditingRules(t *testing.T) {
	const abc = "alpha\nbeta\ngamma\n"
	tests := []struct {
		name    string
		tool    string
		initial *string // nil: no file
		read    string  // "", "full", "partial" (offset 2)
		input   args    // file_path is added
		want    string  // content after success
		errs    []string
	}{
		// Edit
		{name: "edit", tool: "Edit", initial: ptr(abc), read: "full", input: args{"old_string": "beta", "new_string": "BETA"}, want: "alpha\nBETA\ngamma\n"},
		{name: "edit after partial read", tool: "Edit", initial: ptr(abc), read: "partial", input: args{"old_string": "gamma", "new_string": "G"}, want: "alpha\nbeta\nG\n"},
		{name: "edit multi-line", tool: "Edit", initial: ptr(abc), read: "full", input: args{"old_string": "alpha\nbeta\n", "new_string": ""}, want: "gamma\n"},
		{name: "edit replace_all", tool: "Edit", initial: ptr("a a a\n"), read: "full", input: args{"old_string": "a", "new_string": "b", "replace_all": true}, want: "b b b\n"},
		{name: "edit not read", tool: "Edit", initial: ptr(abc), input: args{"old_string": "beta", "new_string": "B"},
			errs: []string{"File has not been read yet. Read it first before writing to it."}},
		{name: "edit same strings", tool: "Edit", initial: ptr(abc), read: "full", input: args{"old_string": "beta", "new_string": "beta"},
			errs: []string{"No changes to make: old_string and new_string are exactly the same."}},
		{name: "edit not found", tool: "Edit", initial: ptr(abc), read: "full", input: args{"old_string": "delta", "new_string": "D"},
			errs: []string{"String to replace not found in file.", "delta", "Read"}},
		{name: "edit many matches", tool: "Edit", initial: ptr("x\nx\nx\n"), read: "full", input: args{"old_string": "x", "new_string": "y"},
			errs: []string{"Found 3 matches of the string to replace, but replace_all is false", "set replace_all to true", "more context"}},
		{name: "edit missing file", tool: "Edit", input: args{"old_string": "a", "new_string": "b"},
			errs: []string{"File does not exist", "Write"}},
		{name: "edit creates with empty old_string", tool: "Edit", input: args{"old_string": "", "new_string": "new\n"}, want: "new\n"},
		{name: "edit empty old_string on content", tool: "Edit", initial: ptr(abc), read: "full", input: args{"old_string": "", "new_string": "x"},
			errs: []string{"old_string is empty", "already has content"}},
		{name: "edit fills empty file", tool: "Edit", initial: ptr(""), read: "full", input: args{"old_string": "", "new_string": "x\n"}, want: "x\n"},
		{name: "edit keeps missing final newline", tool: "Edit", initial: ptr("a\nb"), read: "full", input: args{"old_string": "b", "new_string": "c"}, want: "a\nc"},
		{name: "edit crlf", tool: "Edit", initial: ptr("a\r\nb\r\nc\r\n"), read: "full", input: args{"old_string": "a\nb\n", "new_string": "x\ny\nz\n"},
			want: "x\r\ny\r\nz\r\nc\r\n"},
		{name: "edit crlf with crlf old_string", tool: "Edit", initial: ptr("a\r\nb\r\n"), read: "full", input: args{"old_string": "a\r\nb", "new_string": "q"},
			want: "q\r\n"},
		{name: "edit crlf no final newline", tool: "Edit", initial: ptr("a\r\nb"), read: "full", input: args{"old_string": "b", "new_string": "c\nd"},
			want: "a\r\nc\r\nd"},
		{name: "edit relative path", tool: "Edit", input: args{"file_path": "x.txt", "old_string": "a", "new_string": "b"},
			errs: []string{"file_path must be an absolute path, not a relative path", "x.txt\""}},
		{name: "edit binary", tool: "Edit", initial: ptr("a\x00b"), input: args{"old_string": "a", "new_string": "b"},
			errs: []string{"binary file"}},
		{name: "edit schema: missing new_string", tool: "Edit", initial: ptr(abc), read: "full", input: args{"old_string": "a"},
			errs: []string{"new_string"}},

		// MultiEdit
		{name: "multiedit in order", tool: "MultiEdit", initial: ptr(abc), read: "full",
			input: args{"edits": edits("alpha", "one", false, "one\nbeta", "two", false)}, want: "two\ngamma\n"},
		{name: "multiedit all or nothing", tool: "MultiEdit", initial: ptr(abc), read: "full",
			input: args{"edits": edits("alpha", "one", false, "delta", "x", false)},
			errs:  []string{"edit 2 of 2", "(applied to the text as edits 1-1 left it)", "String to replace not found", "No edit was applied"}},
		{name: "multiedit same strings", tool: "MultiEdit", initial: ptr(abc), read: "full",
			input: args{"edits": edits("alpha", "one", false, "beta", "beta", false)}, errs: []string{"edit 2 of 2", "No changes to make"}},
		{name: "multiedit replace_all", tool: "MultiEdit", initial: ptr("a b a\n"), read: "full",
			input: args{"edits": edits("a", "c", true, "b", "d", false)}, want: "c d c\n"},
		{name: "multiedit ambiguous", tool: "MultiEdit", initial: ptr("a b a\n"), read: "full",
			input: args{"edits": edits("a", "c", false)}, errs: []string{"Found 2 matches"}},
		{name: "multiedit not read", tool: "MultiEdit", initial: ptr(abc), input: args{"edits": edits("alpha", "x", false)},
			errs: []string{"File has not been read yet"}},
		{name: "multiedit creates", tool: "MultiEdit", input: args{"edits": edits("", "hello world\n", false, "world", "there", false)}, want: "hello there\n"},
		{name: "multiedit schema: no edits", tool: "MultiEdit", initial: ptr(abc), read: "full", input: args{"edits": []any{}}, errs: []string{"minItems"}},

		// ReplaceLines
		{name: "replace one line", tool: "ReplaceLines", initial: ptr(abc), read: "full",
			input: args{"start_line": 2, "end_line": 2, "new_content": "BETA"}, want: "alpha\nBETA\ngamma\n"},
		{name: "replace range with more lines", tool: "ReplaceLines", initial: ptr(abc), read: "partial",
			input: args{"start_line": 1, "end_line": 2, "new_content": "1\n2\n3\n"}, want: "1\n2\n3\ngamma\n"},
		{name: "replace deletes", tool: "ReplaceLines", initial: ptr(abc), read: "full",
			input: args{"start_line": 2, "end_line": 3, "new_content": ""}, want: "alpha\n"},
		{name: "replace last line without final newline", tool: "ReplaceLines", initial: ptr("a\nb\nc"), read: "full",
			input: args{"start_line": 3, "end_line": 3, "new_content": "C\n"}, want: "a\nb\nC"},
		{name: "delete last line without final newline", tool: "ReplaceLines", initial: ptr("a\nb\nc"), read: "full",
			input: args{"start_line": 3, "end_line": 3, "new_content": ""}, want: "a\nb"},
		{name: "replace crlf", tool: "ReplaceLines", initial: ptr("a\r\nb\r\nc\r\n"), read: "full",
			input: args{"start_line": 2, "end_line": 2, "new_content": "x\ny"}, want: "a\r\nx\r\ny\r\nc\r\n"},
		{name: "replace outside", tool: "ReplaceLines", initial: ptr(abc), read: "full",
			input: args{"start_line": 2, "end_line": 9, "new_content": "x"}, errs: []string{"line range 2-9 is outside the file", "has 3 lines", "within 1-3"}},
		{name: "replace reversed", tool: "ReplaceLines", initial: ptr(abc), read: "full",
			input: args{"start_line": 3, "end_line": 2, "new_content": "x"}, errs: []string{"invalid line range 3-2", "start_line=N and end_line=N"}},
		{name: "replace empty file", tool: "ReplaceLines", initial: ptr(""), read: "full",
			input: args{"start_line": 1, "end_line": 1, "new_content": "x"}, errs: []string{"is empty (0 lines)", "Write"}},
		{name: "replace no change", tool: "ReplaceLines", initial: ptr(abc), read: "full",
			input: args{"start_line": 2, "end_line": 2, "new_content": "beta"}, errs: []string{"no changes to make"}},
		{name: "replace not read", tool: "ReplaceLines", initial: ptr(abc),
			input: args{"start_line": 2, "end_line": 2, "new_content": "x"}, errs: []string{"File has not been read yet"}},
		{name: "replace missing file", tool: "ReplaceLines",
			input: args{"start_line": 1, "end_line": 1, "new_content": "x"}, errs: []string{"File does not exist", "Write"}},
		{name: "replace schema: line 0", tool: "ReplaceLines", initial: ptr(abc), read: "full",
			input: args{"start_line": 0, "end_line": 1, "new_content": "x"}, errs: []string{"minimum"}},

		// Write
		{name: "write new", tool: "Write", input: args{"content": "new\n"}, want: "new\n"},
		{name: "write new in new dirs", tool: "Write", input: args{"file_path": "d/e/f.txt", "content": "deep"}, want: "deep"},
		{name: "write over full read", tool: "Write", initial: ptr(abc), read: "full", input: args{"content": "all new\n"}, want: "all new\n"},
		{name: "write over partial read", tool: "Write", initial: ptr(abc), read: "partial", input: args{"content": "x"},
			errs: []string{"only been read in part", "Read the whole file"}},
		{name: "write over unread", tool: "Write", initial: ptr(abc), input: args{"content": "x"},
			errs: []string{"File has not been read yet. Read it first before writing to it."}},
		{name: "write keeps crlf", tool: "Write", initial: ptr("a\r\nb\r\n"), read: "full", input: args{"content": "x\ny\n"}, want: "x\r\ny\r\n"},
		{name: "write relative", tool: "Write", input: args{"file_path": "rel", "content": "x"}, errs: []string{"must be an absolute path"}},
		{name: "write directory", tool: "Write", input: args{"file_path": ".", "content": "x"}, errs: []string{"is a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tooltest.New(t)
			tools := toolMap(nil)
			f := env.Path("f.txt")
			if tt.initial != nil {
				writeFile(t, f, *tt.initial)
			}
			switch tt.read {
			case "full":
				mustOK(t, call(t, tools, env, "Read", args{"file_path": f}))
			case "partial":
				mustOK(t, call(t, tools, env, "Read", args{"file_path": f, "offset": 2}))
				if st, _ := env.FileState(f); !st.Partial {
					t.Fatal("read with offset 2 was not recorded as partial")
				}
			}
			input := args{"file_path": f}
			for k, v := range tt.input {
				input[k] = v
			}
			if fp, ok := tt.input["file_path"].(string); ok {
				switch {
				case fp == ".":
					input["file_path"] = env.Cwd()
				case strings.HasPrefix(fp, "d/"):
					f = env.Path(fp)
					input["file_path"] = f
				}
			}
			o := call(t, tools, env, tt.tool, input)
			if tt.errs != nil {
				mustFail(t, o, tt.errs...)
				got, err := os.ReadFile(f)
				switch {
				case tt.initial == nil && err == nil:
					t.Errorf("a failed call created %s", f)
				case tt.initial != nil && string(got) != *tt.initial:
					t.Errorf("a failed call changed the file to %q", got)
				}
				return
			}
			mustOK(t, o)
			if diff := cmp.Diff(tt.want, readFile(t, f)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
			if o.Res.Display == "" || !strings.HasPrefix(o.Res.Display, "--- ") || !strings.Contains(o.Res.Display, "\n@@ -") {
				t.Errorf("Display is not a unified diff: %q", o.Res.Display)
			}
			if o.Access.Kind != tool.AccessEdit || !o.Access.InsideWorkingDirs || o.Access.Paths[0] != f {
				t.Errorf("access = %+v, want edit of %s inside the working dirs", o.Access, f)
			}
			// The write recorded a full, fresh state: another edit needs no Read.
			st, ok := env.FileState(f)
			if !ok || st.Partial || st.Size != int64(len(tt.want)) {
				t.Fatalf("state after the write = %+v (recorded %v)", st, ok)
			}
			mustOK(t, call(t, tools, env, "Write", args{"file_path": f, "content": "after\n"}))
		})
	}
}

func TestEditResultText(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	f := env.Path("a.go")
	var lines []string
	for i := range 20 {
		lines = append(lines, "line"+string(rune('A'+i)))
	}
	writeFile(t, f, strings.Join(lines, "\n")+"\n")
	mustOK(t, call(t, tools, env, "Read", args{"file_path": f}))
	o := mustOK(t, call(t, tools, env, "Edit", args{"file_path": f, "old_string": "lineJ", "new_string": "changed"}))
	want := "The file " + f + " has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n" +
		numbered(7, "lineG", "lineH", "lineI", "changed", "lineK", "lineL", "lineM")
	if diff := cmp.Diff(want, o.Text()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantDiff := "--- " + f + "\n+++ " + f + "\n@@ -7,7 +7,7 @@\n lineG\n lineH\n lineI\n-lineJ\n+changed\n lineK\n lineL\n lineM\n"
	if diff := cmp.Diff(wantDiff, o.Res.Display); diff != "" {
		t.Errorf("Display (-want +got):\n%s", diff)
	}
	o = mustOK(t, call(t, tools, env, "Write", args{"file_path": env.Path("new.txt"), "content": "x\n"}))
	if o.Text() != "File created successfully at: "+env.Path("new.txt") {
		t.Errorf("Write text = %q", o.Text())
	}
	if !strings.HasPrefix(o.Res.Display, "--- /dev/null\n+++ "+env.Path("new.txt")+"\n@@ -0,0 +1 @@\n+x\n") {
		t.Errorf("Write display = %q", o.Res.Display)
	}
}

func TestChangedSinceRead(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	f := env.Path("f.txt")
	writeFile(t, f, "one\ntwo\n")
	mustOK(t, call(t, tools, env, "Read", args{"file_path": f}))

	// Same content, new mtime (a touch, or a formatter that changed nothing): accepted.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	mustOK(t, call(t, tools, env, "Edit", args{"file_path": f, "old_string": "one", "new_string": "uno"}))

	// Changed by someone else, same size: the hash tells.
	writeFile(t, f, "UNO\ntwo\n")
	muchLater := later.Add(time.Hour)
	if err := os.Chtimes(f, muchLater, muchLater); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Edit", "MultiEdit", "ReplaceLines", "Write"} {
		in := map[string]args{
			"Edit":         {"old_string": "two", "new_string": "dos"},
			"MultiEdit":    {"edits": edits("two", "dos", false)},
			"ReplaceLines": {"start_line": 2, "end_line": 2, "new_content": "dos"},
			"Write":        {"content": "x"},
		}[name]
		in["file_path"] = f
		mustFail(t, call(t, tools, env, name, in), "File has been modified since read, either by the user or by a linter. Read it again")
	}
	// Changed size: refused without hashing.
	writeFile(t, f, "longer content\n")
	mustFail(t, call(t, tools, env, "Edit", args{"file_path": f, "old_string": "longer", "new_string": "x"}), "modified since read")
	if got := readFile(t, f); got != "longer content\n" {
		t.Fatalf("refused edits changed the file: %q", got)
	}
	// After a new Read it works.
	mustOK(t, call(t, tools, env, "Read", args{"file_path": f}))
	mustOK(t, call(t, tools, env, "Edit", args{"file_path": f, "old_string": "longer", "new_string": "x"}))
}

// TestChangedBetweenValidateAndRun: the file changes while the call waits for
// permission; Run checks again and refuses.
func TestChangedBetweenValidateAndRun(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	f := env.Path("f.txt")
	writeFile(t, f, "a\n")
	mustOK(t, call(t, tools, env, "Read", args{"file_path": f}))
	c := &tool.Call{ID: "1", Name: "Edit", Input: []byte(`{"file_path":"` + f + `","old_string":"a","new_string":"b"}`), Env: env}
	if err := tools["Edit"].Validate(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, "a\na\n")
	res, err := tools["Edit"].Run(t.Context(), c, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "modified since read") {
		t.Fatalf("Run = %+v, %v; want a modified-since-read error result", res, err)
	}
}

func TestModePreserved(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	f := env.Path("run.sh")
	writeFile(t, f, "#!/bin/sh\necho hi\n")
	if err := os.Chmod(f, 0o751); err != nil {
		t.Fatal(err)
	}
	mustOK(t, call(t, tools, env, "Read", args{"file_path": f}))
	mustOK(t, call(t, tools, env, "Edit", args{"file_path": f, "old_string": "hi", "new_string": "ho"}))
	mustOK(t, call(t, tools, env, "Write", args{"file_path": f, "content": "#!/bin/sh\n"}))
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 {
		t.Errorf("mode = %v, want 0751", fi.Mode().Perm())
	}
	// No temporary files are left behind.
	entries, err := os.ReadDir(env.Cwd())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only run.sh", len(entries))
	}
}

func TestSymlinks(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "secret.txt")
	writeFile(t, target, "secret\n")
	link := env.Path("link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Read", "Edit"} {
		in := args{"file_path": link}
		if name == "Edit" {
			in["old_string"], in["new_string"] = "secret", "public"
		}
		c := &tool.Call{Name: name, Input: mustJSON(t, in), Env: env}
		acc, err := tools[name].CheckPermission(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if acc.InsideWorkingDirs || len(acc.Paths) != 1 || acc.Paths[0] != target {
			t.Errorf("%s access = %+v, want %s outside the working dirs", name, acc, target)
		}
	}
	// Editing through the link changes the target and keeps the link.
	mustOK(t, call(t, tools, env, "Read", args{"file_path": link}))
	mustOK(t, call(t, tools, env, "Edit", args{"file_path": link, "old_string": "secret", "new_string": "public"}))
	if got := readFile(t, target); got != "public\n" {
		t.Errorf("target = %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	// A new file under a linked directory resolves through the nearest existing parent.
	dirLink := env.Path("out")
	if err := os.Symlink(outside, dirLink); err != nil {
		t.Fatal(err)
	}
	c := &tool.Call{Name: "Write", Input: mustJSON(t, args{"file_path": filepath.Join(dirLink, "new", "x.txt"), "content": "x"}), Env: env}
	acc, err := tools["Write"].CheckPermission(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(outside, "new", "x.txt"); acc.InsideWorkingDirs || acc.Paths[0] != want || acc.Kind != tool.AccessEdit {
		t.Errorf("access = %+v, want edit of %s outside", acc, want)
	}
	// Inside, through an additional working directory.
	env.Dirs = append(env.Dirs, outside)
	if acc, _ := tools["Write"].CheckPermission(t.Context(), c); !acc.InsideWorkingDirs {
		t.Errorf("access = %+v, want inside the additional directory", acc)
	}
}

func TestAttributes(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	f := env.Path("f")
	writeFile(t, f, "x")
	r := tools["Read"].Attributes(nil)
	if !r.ReadOnly || !r.ConcurrencySafe || r.Destructive || r.MaxResultChars < 1<<30 || r.Origin != tool.OriginBuiltin {
		t.Errorf("Read attributes = %+v", r)
	}
	for _, name := range []string{"Edit", "MultiEdit", "ReplaceLines", "Write"} {
		a := tools[name].Attributes(mustJSON(t, args{"file_path": env.Path("new")}))
		if a.ReadOnly || a.ConcurrencySafe || a.Destructive || a.Origin != tool.OriginBuiltin {
			t.Errorf("%s attributes = %+v", name, a)
		}
	}
	if a := tools["Write"].Attributes(mustJSON(t, args{"file_path": f, "content": ""})); !a.Destructive {
		t.Error("Write over an existing file is not destructive")
	}
}

func TestSpecs(t *testing.T) {
	var names []string
	for _, tl := range toolMap(nil) {
		s := tl.Spec()
		names = append(names, s.Name)
		tooltest.Schema(t, tl)
		if len(s.Description) < 200 {
			t.Errorf("%s: description too short for a model", s.Name)
		}
	}
	if len(names) != 5 {
		t.Errorf("Tools returned %v", names)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
