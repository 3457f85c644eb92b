package fs_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

// inputFor is a schema-valid input of each file tool for path.
func inputFor(name, path string) args {
	switch name {
	case "Read":
		return args{"file_path": path}
	case "Write":
		return args{"file_path": path, "content": "x"}
	case "Edit":
		return args{"file_path": path, "old_string": "a", "new_string": "b"}
	case "MultiEdit":
		return args{"file_path": path, "edits": []args{{"old_string": "a", "new_string": "b"}}}
	case "ReplaceLines":
		return args{"file_path": path, "start_line": 1, "end_line": 1, "new_content": "b"}
	}
	panic(name)
}

var editTools = []string{"Write", "Edit", "MultiEdit", "ReplaceLines"}

func checkAccess(t *testing.T, tools map[string]tool.Tool, env *tooltest.Env, name, path string) tool.Access {
	t.Helper()
	c := &tool.Call{Name: name, Input: mustJSON(t, inputFor(name, path)), Env: env}
	acc, err := tools[name].CheckPermission(t.Context(), c)
	if err != nil {
		t.Fatalf("%s CheckPermission(%s): %v", name, path, err)
	}
	return acc
}

func TestAccessReadsAndWrites(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, env.Path("a.txt"), "a\n")
	writeFile(t, filepath.Join(outside, "secret.txt"), "a\n")
	mustSymlink(t, filepath.Join(outside, "secret.txt"), env.Path("link.txt"))
	mustSymlink(t, outside, env.Path("out"))
	mustSymlink(t, filepath.Join(outside, "not-yet", "made.txt"), env.Path("dangling.txt"))
	mustSymlink(t, "rel-target.txt", env.Path("dangling-rel.txt"))

	cases := []struct {
		name, path, want string
		inside           bool
	}{
		{"a file in the root", env.Path("a.txt"), env.Path("a.txt"), true},
		{"a new file", env.Path("new.txt"), env.Path("new.txt"), true},
		{"a new file in new directories", env.Path("x/y/z.txt"), env.Path("x/y/z.txt"), true},
		{"a symlink to a file outside", env.Path("link.txt"), filepath.Join(outside, "secret.txt"), false},
		{"a new file under a linked directory", env.Path("out/new/x.txt"), filepath.Join(outside, "new", "x.txt"), false},
		{"a dangling symlink", env.Path("dangling.txt"), filepath.Join(outside, "not-yet", "made.txt"), false},
		{"a dangling relative symlink", env.Path("dangling-rel.txt"), env.Path("rel-target.txt"), true},
		{"a path with dot-dot is cleaned", env.Path("x") + "/../a.txt", env.Path("a.txt"), true},
		{"an absolute path outside", filepath.Join(outside, "secret.txt"), filepath.Join(outside, "secret.txt"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acc := checkAccess(t, tools, env, "Read", tc.path)
			if acc.Kind != tool.AccessRead || !slices.Equal(acc.Reads, []string{tc.want}) || len(acc.Writes) != 0 {
				t.Errorf("Read access = %+v, want Reads [%s]", acc, tc.want)
			}
			if !slices.Equal(acc.Paths, acc.Reads) || acc.InsideWorkingDirs != tc.inside || acc.AlwaysAsk != "" {
				t.Errorf("Read access = %+v, want Paths = Reads, inside %v, no AlwaysAsk", acc, tc.inside)
			}
			for _, name := range editTools {
				acc := checkAccess(t, tools, env, name, tc.path)
				if acc.Kind != tool.AccessEdit || !slices.Equal(acc.Writes, []string{tc.want}) || len(acc.Reads) != 0 {
					t.Errorf("%s access = %+v, want Writes [%s]", name, acc, tc.want)
				}
				if !slices.Equal(acc.Paths, acc.Writes) || acc.InsideWorkingDirs != tc.inside || acc.AlwaysAsk != "" {
					t.Errorf("%s access = %+v, want Paths = Writes, inside %v, no AlwaysAsk", name, acc, tc.inside)
				}
			}
		})
	}
}

func TestAccessSymlinkLoop(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	mustSymlink(t, env.Path("loop-b"), env.Path("loop-a"))
	mustSymlink(t, env.Path("loop-a"), env.Path("loop-b"))
	acc := checkAccess(t, tools, env, "Write", env.Path("loop-a"))
	if len(acc.Writes) != 1 || acc.Writes[0] == "" {
		t.Errorf("access = %+v, want one write", acc)
	}
}

func TestAccessProtectedPaths(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".git", ".claude", ".tackle", ".vscode", "sub/.git/hooks"} {
		if err := os.MkdirAll(env.Path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, env.Path(".git/config"), "[core]\n")
	// A harmless name that points into .git: protected by its real path.
	mustSymlink(t, env.Path(".git/config"), env.Path("notes.txt"))
	// A protected name that points elsewhere: protected by the name given.
	mustSymlink(t, outside, env.Path("link-dir"))
	mustSymlink(t, outside, env.Path(".vscode/linked"))

	cases := []struct {
		path, name string // name is "" for a path that is not protected
	}{
		{env.Path(".git/config"), ".git"},
		{env.Path(".git/hooks/pre-commit"), ".git"},
		{env.Path("sub/.git/hooks/post-checkout"), ".git"},
		{env.Path(".claude/settings.json"), ".claude"},
		{env.Path(".claude/settings.local.json"), ".claude"},
		{env.Path(".tackle/settings.local.json"), ".tackle"},
		{env.Path(".vscode/tasks.json"), ".vscode"},
		{env.Path(".vscode/linked/x"), ".vscode"},
		{env.Path(".mcp.json"), ".mcp.json"},
		{env.Path(".gitmodules"), ".gitmodules"},
		{filepath.Join(outside, ".bashrc"), ".bashrc"},
		{filepath.Join(outside, ".zshrc"), ".zshrc"},
		{filepath.Join(outside, ".profile"), ".profile"},
		{filepath.Join(outside, ".bash_profile"), ".bash_profile"},
		{filepath.Join(outside, ".zprofile"), ".zprofile"},
		{filepath.Join(outside, ".gitconfig"), ".gitconfig"},
		{env.Path("notes.txt"), ".git"},
		{env.Path("src/main.go"), ""},
		{env.Path(".gitignore"), ""},
		{env.Path(".github/workflows/ci.yml"), ""},
		{env.Path("link-dir/x"), ""},
	}
	for _, tc := range cases {
		for _, name := range editTools {
			acc := checkAccess(t, tools, env, name, tc.path)
			switch {
			case tc.name == "" && acc.AlwaysAsk != "":
				t.Errorf("%s %s: AlwaysAsk = %q, want none", name, tc.path, acc.AlwaysAsk)
			case tc.name != "" && (!strings.Contains(acc.AlwaysAsk, "is a protected path ("+tc.name+")")):
				t.Errorf("%s %s: AlwaysAsk = %q, want a protected path (%s)", name, tc.path, acc.AlwaysAsk, tc.name)
			}
		}
		// Reading a protected path needs no prompt of its own.
		if acc := checkAccess(t, tools, env, "Read", tc.path); acc.AlwaysAsk != "" {
			t.Errorf("Read %s: AlwaysAsk = %q, want none", tc.path, acc.AlwaysAsk)
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestReadRecordsRealPath: a Read through a symlinked directory and a
// symlinked file records the file under its real path, the one
// tool.RealPath gives; when the link changes between CheckPermission and
// Run, the real path of the file Run read is recorded, not the one
// CheckPermission resolved.
func TestReadRecordsRealPath(t *testing.T) {
	env := tooltest.New(t)
	tools := toolMap(nil)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(outside, "d", "f.txt")
	other := filepath.Join(outside, "d", "g.txt")
	writeFile(t, real, "a\n")
	writeFile(t, other, "b\n")
	mustSymlink(t, outside, env.Path("out"))
	mustSymlink(t, filepath.Join(env.Path("out"), "d", "f.txt"), env.Path("link.txt"))
	recorded := func() []string { return slices.Sorted(maps.Keys(env.Files())) }
	for _, p := range []string{env.Path("out/d/f.txt"), env.Path("link.txt"), env.Path("out/d/../d/f.txt")} {
		mustOK(t, call(t, tools, env, "Read", map[string]any{"file_path": p}))
		if got := recorded(); !slices.Equal(got, []string{real}) {
			t.Errorf("Read %s recorded %v, want [%s]", p, got, real)
		}
	}

	c := &tool.Call{Name: "Read", Input: mustJSON(t, map[string]any{"file_path": env.Path("link.txt")}), Env: env}
	if err := tools["Read"].Validate(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if acc, err := tools["Read"].CheckPermission(t.Context(), c); err != nil || !slices.Equal(acc.Reads, []string{real}) {
		t.Fatalf("CheckPermission: %v, %v", acc, err)
	}
	if err := os.Remove(env.Path("link.txt")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, other, env.Path("link.txt"))
	res, err := tools["Read"].Run(t.Context(), c, nil)
	if err != nil || res.IsError {
		t.Fatalf("Run: %v, %v", res, err)
	}
	env.Apply(res)
	if got := recorded(); !slices.Equal(got, []string{real, other}) {
		t.Errorf("after the link moved to %s, recorded %v", other, got)
	}
}
