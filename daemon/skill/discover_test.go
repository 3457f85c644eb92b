package skill_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/skill"
)

// write creates a file (and its directories) below root.
func write(t testing.TB, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mkdir(t testing.TB, root, rel string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t testing.TB, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillMD is a SKILL.md with this description.
func skillMD(desc string) string { return "---\ndescription: " + desc + "\n---\nDo it.\n" }

// sources is a summary of a set: name → source and the description.
func summary(skills []*skill.Skill) []string {
	var out []string
	for _, sk := range skills {
		out = append(out, sk.Name+" "+sk.Source+" "+sk.Description)
	}
	return out
}

// emptyBuiltin keeps built-ins out of tests that count skills.
var emptyBuiltin = fstest.MapFS{}

func TestStaticPrecedence(t *testing.T) {
	tmp := t.TempDir()
	write(t, tmp, "managed/dup/SKILL.md", skillMD("managed"))
	write(t, tmp, "cfg/tackle/skills/dup/SKILL.md", skillMD("user-tackle"))
	write(t, tmp, "home/.claude/skills/dup/SKILL.md", skillMD("user-claude"))
	write(t, tmp, "home/.claude/skills/only-user/SKILL.md", skillMD("user-claude"))
	write(t, tmp, "home/.claude/skills/writing-skills/SKILL.md", skillMD("mine"))
	write(t, tmp, "home/.claude/commands/ucmd.md", "User command.\n")
	mkdir(t, tmp, "repo/.git")
	write(t, tmp, "repo/.claude/skills/dup/SKILL.md", skillMD("project-far"))
	write(t, tmp, "repo/.claude/skills/far/SKILL.md", skillMD("project-far"))
	write(t, tmp, "repo/.claude/skills/near/SKILL.md", skillMD("project-far"))
	write(t, tmp, "repo/sub/.tackle/skills/dup/SKILL.md", skillMD("project-near-tackle"))
	write(t, tmp, "repo/sub/.tackle/skills/near/SKILL.md", skillMD("project-near-tackle"))
	write(t, tmp, "repo/sub/.claude/skills/near/SKILL.md", skillMD("project-near-claude"))
	write(t, tmp, "repo/.claude/commands/near.md", "A command that loses to the skill.\n")
	write(t, tmp, "repo/.claude/commands/cmd-only.md", "Only a command.\n")
	write(t, tmp, "repo/sub/.claude/commands/cmd-only.md", "The nearer command.\n")
	write(t, tmp, "repo/.claude/commands/frontend/component.md", "A namespaced command.\n")
	write(t, tmp, ".claude/skills/above-repo/SKILL.md", skillMD("above the repository root"))
	write(t, tmp, "extra/.claude/skills/dup/SKILL.md", skillMD("additional"))
	write(t, tmp, "extra/.claude/skills/extra-only/SKILL.md", skillMD("additional"))
	write(t, tmp, "plugins/myplug/skills/dup/SKILL.md", skillMD("plugin"))
	write(t, tmp, "plugins/myplug/commands/run.md", "Plugin command.\n")

	c := skill.NewCatalog(nil) // with the real built-ins
	set := c.Static(skill.Sources{
		Root: filepath.Join(tmp, "repo"), Cwd: filepath.Join(tmp, "repo", "sub"),
		AdditionalDirs: []string{filepath.Join(tmp, "extra")},
		ConfigHome:     filepath.Join(tmp, "cfg"), Home: filepath.Join(tmp, "home"),
		ManagedDir: filepath.Join(tmp, "managed"),
		Plugins:    plugins(t, filepath.Join(tmp, "plugins", "myplug")),
	})
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems)
	}
	want := []string{
		"cmd-only command The nearer command.",
		"component command A namespaced command. (project:frontend)",
		"dup managed managed",
		"extra-only additional additional",
		"far project project-far",
		"myplug:dup plugin plugin",
		"myplug:run plugin Plugin command.",
		"near project project-near-tackle",
		"only-user user user-claude",
		"ucmd command User command.",
		"writing-skills user mine",
	}
	if diff := cmp.Diff(want, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	wantShadowed := []string{
		"dup user user-tackle",
		"dup user user-claude",
		"dup project project-near-tackle",
		"near project project-near-claude",
		"dup project project-far",
		"near project project-far",
		"dup additional additional",
		"writing-skills builtin " + builtinDescription(t),
		"cmd-only command Only a command.",
		"near command A command that loses to the skill.",
	}
	if diff := cmp.Diff(wantShadowed, summary(set.Shadowed)); diff != "" {
		t.Errorf("shadowed (-want +got):\n%s", diff)
	}
	if sk, ok := set.Lookup("dup"); !ok || sk.Path != filepath.Join(tmp, "managed", "dup", "SKILL.md") || sk.Dir != filepath.Join(tmp, "managed", "dup") {
		t.Errorf("Lookup(dup) = %+v, %v", sk, ok)
	}
}

func builtinDescription(t *testing.T) string {
	t.Helper()
	set := skill.NewCatalog(nil).Static(skill.Sources{})
	sk, ok := set.Lookup("writing-skills")
	if !ok {
		t.Fatal("no built-in writing-skills")
	}
	return sk.Description
}

func TestBuiltins(t *testing.T) {
	set := skill.NewCatalog(nil).Static(skill.Sources{})
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems)
	}
	if len(set.Skills) == 0 {
		t.Fatal("no built-in skills")
	}
	for _, sk := range set.Skills {
		if sk.Source != skill.SourceBuiltin || sk.Path != "" || sk.Dir != "" {
			t.Errorf("%s: source %q path %q dir %q", sk.Name, sk.Source, sk.Path, sk.Dir)
		}
		if len(sk.Warnings) > 0 || len(sk.Description) < 40 || len(sk.Body) < 500 {
			t.Errorf("%s: warnings %q, description %q, body %d bytes", sk.Name, sk.Warnings, sk.Description, len(sk.Body))
		}
	}
	// A broken built-in is a problem, not a crash, and hides no other.
	c := skill.NewCatalog(&skill.Options{Builtin: fstest.MapFS{
		"good/SKILL.md":   {Data: []byte(skillMD("good"))},
		"broken/SKILL.md": {Data: []byte("---\nname: [x\n---\n")},
		"empty/.keep":     {Data: nil},
	}})
	set = c.Static(skill.Sources{})
	if diff := cmp.Diff([]string{"good builtin good"}, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	if len(set.Problems) != 2 || !strings.HasPrefix(set.Problems[0].Error(), "builtin/broken/SKILL.md:2:") ||
		!strings.HasPrefix(set.Problems[1].Error(), "builtin/empty/SKILL.md: reading the file") {
		t.Errorf("problems: %v", set.Problems)
	}
}

func TestStaticProblemsHideNothing(t *testing.T) {
	tmp := t.TempDir()
	skills := filepath.Join(tmp, "proj", ".claude", "skills")
	write(t, skills, "good/SKILL.md", skillMD("fine"))
	write(t, skills, "broken/SKILL.md", "---\nname: broken\nallowed-tools: [Read\n---\nx\n")
	mkdir(t, skills, "is-a-dir/SKILL.md")
	mkdir(t, skills, "dangling")
	if err := os.Symlink(filepath.Join(tmp, "nowhere.md"), filepath.Join(skills, "dangling", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	write(t, skills, "lower/skill.md", skillMD("misnamed"))
	mkdir(t, skills, "not-a-skill/scripts")
	write(t, skills, "README.md", "Not a skill directory.\n")
	write(t, skills, ".hidden/SKILL.md", skillMD("hidden"))
	write(t, skills, "also-good/SKILL.md", skillMD("fine too"))
	write(t, tmp, "proj/.claude/commands/dangling-dir/x.md", "fine\n")

	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Root: filepath.Join(tmp, "proj"), Cwd: filepath.Join(tmp, "proj")})
	if diff := cmp.Diff([]string{"also-good project fine too", "good project fine", "x command fine (project:dangling-dir)"}, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	var got []string
	for _, p := range set.Problems {
		got = append(got, strings.TrimPrefix(p.Error(), skills+string(filepath.Separator)))
	}
	want := []string{
		`broken/SKILL.md:3:16: the frontmatter is not valid YAML: sequence end token ']' not found (in "allowed-tools: [Read")`,
		`dangling/SKILL.md: SKILL.md is a symlink to "` + filepath.Join(tmp, "nowhere.md") + `", which does not exist`,
		`is-a-dir/SKILL.md: SKILL.md is a directory, not a regular file`,
		`lower/skill.md: the skill file must be named SKILL.md, not skill.md`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A planted repository's skill files that are symlinks to a device, FIFOs
// or too large are problems naming the path and the reason: discovery
// returns at once, reads none of them, and every other skill loads.
func TestStaticRefusesNonRegularFiles(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	skills := filepath.Join(proj, ".claude", "skills")
	commands := filepath.Join(proj, ".claude", "commands")
	write(t, skills, "good/SKILL.md", skillMD("fine"))
	mkdir(t, skills, "zero")
	symlink(t, "/dev/zero", filepath.Join(skills, "zero", "SKILL.md"))
	mkdir(t, skills, "fifo")
	mkfifo(t, filepath.Join(skills, "fifo", "SKILL.md"))
	huge := write(t, skills, "huge/SKILL.md", skillMD("huge"))
	if err := os.Truncate(huge, 2*skill.MaxFileSize); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	write(t, commands, "cmd.md", "A command.\n")
	mkfifo(t, filepath.Join(commands, "fifo.md"))
	symlink(t, "/dev/zero", filepath.Join(commands, "zero.md"))
	// A skills directory that is a FIFO is not opened as one either.
	mkdir(t, proj, ".tackle")
	mkfifo(t, filepath.Join(proj, ".tackle", "skills"))

	done := make(chan *skill.Set, 1)
	go func() {
		done <- skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Root: proj, Cwd: proj})
	}()
	var set *skill.Set
	select {
	case set = <-done:
	case <-time.After(10 * time.Second): // bounds a failure only: a FIFO read never returns
		t.Fatal("discovery blocked")
	}
	if diff := cmp.Diff([]string{"cmd command A command.", "good project fine"}, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	var got []string
	for _, p := range set.Problems {
		got = append(got, strings.TrimPrefix(p.Error(), proj+string(filepath.Separator)))
	}
	want := []string{
		`.tackle/skills: reading the skills directory: not a directory`,
		`.claude/skills/fifo/SKILL.md: SKILL.md is a FIFO, not a regular file`,
		`.claude/skills/huge/SKILL.md: SKILL.md is 16 MiB, over the limit of 8 MiB`,
		`.claude/skills/zero/SKILL.md: SKILL.md is a character device, not a regular file (it is a symlink to /dev/zero)`,
		`.claude/commands/fifo.md: the command file is a FIFO, not a regular file`,
		`.claude/commands/zero.md: the command file is a character device, not a regular file (it is a symlink to /dev/zero)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestStaticUnreadableDir: a skills path that is a file is a problem.
func TestStaticUnreadableDir(t *testing.T) {
	tmp := t.TempDir()
	write(t, tmp, "home/.claude/skills", "not a directory")
	write(t, tmp, "cfg/tackle/skills/ok/SKILL.md", skillMD("ok"))
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Home: filepath.Join(tmp, "home"), ConfigHome: filepath.Join(tmp, "cfg")})
	if len(set.Skills) != 1 || len(set.Problems) != 1 || !strings.Contains(set.Problems[0].Message, "reading the skills directory: not a directory") {
		t.Errorf("skills %v problems %v", summary(set.Skills), set.Problems)
	}
}

func TestProjectDirs(t *testing.T) {
	tmp := t.TempDir()
	mkdir(t, tmp, "repo/.git")
	mkdir(t, tmp, "repo/a/b")
	mkdir(t, tmp, "plain/a/b")
	write(t, tmp, "worktree/.git", "gitdir: elsewhere\n") // a worktree's .git is a file
	mkdir(t, tmp, "worktree/x")
	j := func(p ...string) string { return filepath.Join(append([]string{tmp}, p...)...) }
	tests := []struct {
		name string
		src  skill.Sources
		want []string
	}{
		{"up to the repository", skill.Sources{Root: j("repo", "a"), Cwd: j("repo", "a", "b")}, []string{j("repo", "a", "b"), j("repo", "a"), j("repo")}},
		{"worktree .git file", skill.Sources{Cwd: j("worktree", "x")}, []string{j("worktree", "x"), j("worktree")}},
		{"no repository: up to root", skill.Sources{Root: j("plain"), Cwd: j("plain", "a", "b")}, []string{j("plain", "a", "b"), j("plain", "a"), j("plain")}},
		{"no repository, cwd outside root", skill.Sources{Root: j("repo"), Cwd: j("plain", "a")}, []string{j("plain", "a")}},
		{"root only", skill.Sources{Root: j("plain", "a")}, []string{j("plain", "a")}},
		{"nothing", skill.Sources{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, skill.ProjectDirs(tt.src)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStaticAnthropic: the real skills load from a skills directory, with
// no problem and no warning.
func TestStaticAnthropic(t *testing.T) {
	dir := "/work/shared/testdata/skills-anthropic"
	if _, err := os.Stat(dir); err != nil {
		dir = "../../../shared/testdata/skills-anthropic"
	}
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{ManagedDir: dir})
	if len(set.Skills) != 12 || len(set.Problems) > 0 {
		t.Fatalf("%d skills, problems %v", len(set.Skills), set.Problems)
	}
	for _, sk := range set.Skills {
		if len(sk.Warnings) > 0 {
			t.Errorf("%s: %q", sk.Name, sk.Warnings)
		}
	}
}

func TestCatalogCache(t *testing.T) {
	tmp := t.TempDir()
	p := write(t, tmp, "s/one/SKILL.md", skillMD("first"))
	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	src := skill.Sources{ManagedDir: filepath.Join(tmp, "s")}
	a := c.Static(src).Skills[0]
	b := c.Static(src).Skills[0]
	if a != b {
		t.Error("an unchanged file was parsed again")
	}
	if err := os.WriteFile(p, []byte(skillMD("second, longer")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.Static(src).Skills[0].Description; got != "second, longer" {
		t.Errorf("after a change: %q", got)
	}
	if a.Description != "first" {
		t.Error("a cached skill was modified")
	}
}

// makeTree writes n skills below root/.claude/skills (in a repository).
func makeTree(tb testing.TB, root string, n int) {
	tb.Helper()
	mkdir(tb, root, ".git")
	for i := range n {
		write(tb, root, fmt.Sprintf(".claude/skills/skill-%04d/SKILL.md", i), fmt.Sprintf(
			"---\nname: skill-%04d\ndescription: Skill number %d: does one thing well. Use when the user asks for thing %d.\nallowed-tools: [Read, Grep]\n---\n# Skill %d\n\n%s\n",
			i, i, i, i, strings.Repeat("Instructions for the model. ", 40)))
	}
}

func TestStaticThousand(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, 1000)
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Root: root, Cwd: root})
	if len(set.Skills) != 1000 || len(set.Problems) > 0 {
		t.Fatalf("%d skills, problems %v", len(set.Skills), set.Problems)
	}
	// The descriptions have an unquoted colon: read leniently, warned.
	if sk := set.Skills[999]; sk.Name != "skill-0999" || !strings.HasPrefix(sk.Description, "Skill number 999: does") || len(sk.Warnings) != 1 {
		t.Errorf("%+v", sk)
	}
}

// BenchmarkDiscoverCold discovers 1,000 skills with a new Catalog each time
// (nothing cached but the OS's file cache). Goal: ≤ 200 ms.
func BenchmarkDiscoverCold(b *testing.B) {
	root := b.TempDir()
	makeTree(b, root, 1000)
	src := skill.Sources{Root: root, Cwd: root}
	b.ResetTimer()
	for b.Loop() {
		set := skill.NewCatalog(nil).Static(src)
		if len(set.Skills) != 1001 {
			b.Fatalf("%d skills", len(set.Skills))
		}
	}
}

// BenchmarkDiscoverWarm discovers the same 1,000 skills with a warm cache
// (what every View costs).
func BenchmarkDiscoverWarm(b *testing.B) {
	root := b.TempDir()
	makeTree(b, root, 1000)
	src := skill.Sources{Root: root, Cwd: root}
	c := skill.NewCatalog(nil)
	c.Static(src)
	b.ResetTimer()
	for b.Loop() {
		c.Static(src)
	}
}
