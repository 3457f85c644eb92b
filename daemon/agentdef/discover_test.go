package agentdef_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/agentdef"
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

// agentMD is an agent file named name with this description and extra
// frontmatter lines.
func agentMD(name, desc string, extra ...string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n" + strings.Join(extra, "") + "---\nYou are " + name + ".\n"
}

// summary is "name source description" per definition.
func summary(defs []*agentdef.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name+" "+d.Source+" "+d.Description)
	}
	return out
}

// noBuiltins keeps the built-ins out of tests that count agents.
var noBuiltins = &agentdef.Options{Builtins: []*agentdef.Definition{}}

// relProblems formats problems with paths relative to root.
func relProblems(root string, ps []agentdef.Problem) []string {
	var out []string
	for _, p := range ps {
		s := strings.TrimPrefix(p.Error(), root+string(filepath.Separator))
		if p.Skipped {
			s = "[skipped] " + s
		}
		out = append(out, s)
	}
	return out
}

func TestLoadPrecedence(t *testing.T) {
	tmp := t.TempDir()
	write(t, tmp, "managed/dup.md", agentMD("dup", "managed"))
	mkdir(t, tmp, "repo/.git")
	write(t, tmp, "repo/.claude/agents/dup.md", agentMD("dup", "project-root"))
	write(t, tmp, "repo/.claude/agents/far.md", agentMD("far", "project-root"))
	write(t, tmp, "repo/.claude/agents/near.md", agentMD("near", "project-root"))
	write(t, tmp, "repo/sub/.tackle/agents/near-tackle.md", agentMD("near", "project-sub-tackle"))
	write(t, tmp, "repo/sub/.claude/agents/near.md", agentMD("near", "project-sub-claude"))
	write(t, tmp, "repo/sub/.claude/agents/user-beaten.md", agentMD("mine", "project-sub-claude"))
	write(t, tmp, ".claude/agents/above.md", agentMD("above-repo", "above the repository root"))
	write(t, tmp, "extra/.tackle/agents/x.md", agentMD("extra", "additional-tackle"))
	write(t, tmp, "extra/.claude/agents/x.md", agentMD("extra", "additional-claude"))
	write(t, tmp, "extra/.claude/agents/far.md", agentMD("far", "additional-claude"))
	write(t, tmp, "cfg/tackle/agents/mine.md", agentMD("mine", "user-tackle"))
	write(t, tmp, "cfg/tackle/agents/only-user.md", agentMD("only-user", "user-tackle"))
	write(t, tmp, "home/.claude/agents/only-user.md", agentMD("only-user", "user-claude"))
	write(t, tmp, "home/.claude/agents/general.md", agentMD("general-purpose", "my own general-purpose"))
	write(t, tmp, "home/.claude/agents/extra.md", agentMD("extra", "user-claude"))
	write(t, tmp, "plugins/toolkit/agents/dup.md", agentMD("dup", "plugin"))
	write(t, tmp, "plugins/toolkit/agents/review/security.md", agentMD("security", "plugin, in a subfolder"))

	src := agentdef.Sources{
		Root: filepath.Join(tmp, "repo"), Cwd: filepath.Join(tmp, "repo", "sub"),
		AdditionalDirs: []string{filepath.Join(tmp, "extra")},
		ConfigHome:     filepath.Join(tmp, "cfg"), Home: filepath.Join(tmp, "home"),
		ManagedDir: filepath.Join(tmp, "managed"),
		Plugins:    plugins(t, filepath.Join(tmp, "plugins", "toolkit")),
		Trusted:    true,
	}
	set := agentdef.NewCatalog(nil).Load(src) // with the built-ins
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %q", relProblems(tmp, set.Problems))
	}
	builtin := agentdef.Builtins()
	want := []string{
		"Explore builtin " + builtin[1].Description,
		"Plan builtin " + builtin[2].Description,
		"dup managed managed",
		"extra additional additional-tackle",
		"far project project-root",
		"general-purpose user my own general-purpose",
		"mine project project-sub-claude",
		"near project project-sub-tackle",
		"only-user user user-tackle",
		"toolkit:dup plugin plugin",
		"toolkit:review:security plugin plugin, in a subfolder",
	}
	if diff := cmp.Diff(want, summary(set.Agents)); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	wantShadowed := []string{
		"near project project-sub-claude",
		"dup project project-root",
		"near project project-root",
		"far additional additional-claude",
		"extra additional additional-claude",
		"mine user user-tackle",
		"extra user user-claude",
		"only-user user user-claude",
		"general-purpose builtin " + builtin[0].Description,
	}
	if diff := cmp.Diff(wantShadowed, summary(set.Shadowed)); diff != "" {
		t.Errorf("shadowed (-want +got):\n%s", diff)
	}
	j := func(p ...string) string { return filepath.Join(append([]string{tmp}, p...)...) }
	wantDirs := []string{
		j("managed"),
		j("repo", "sub", ".tackle", "agents"), j("repo", "sub", ".claude", "agents"),
		j("repo", ".tackle", "agents"), j("repo", ".claude", "agents"),
		j("extra", ".tackle", "agents"), j("extra", ".claude", "agents"),
		j("cfg", "tackle", "agents"), j("home", ".claude", "agents"),
		j("plugins", "toolkit", "agents"),
	}
	if diff := cmp.Diff(wantDirs, set.Dirs); diff != "" {
		t.Errorf("dirs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantDirs, agentdef.AgentsDirs(src)); diff != "" {
		t.Errorf("AgentsDirs (-want +got):\n%s", diff)
	}
	if d, ok := set.Lookup("near"); !ok || d.Path != j("repo", "sub", ".tackle", "agents", "near-tackle.md") || d.Prompt != "You are near." {
		t.Errorf("Lookup(near) = %+v, %v", d, ok)
	}
	if _, ok := set.Lookup("above-repo"); ok {
		t.Error("an agent above the repository root was loaded")
	}
	if _, ok := set.Lookup("security"); ok {
		t.Error("a plugin agent is known without its plugin's name")
	}
}

// The home directory's .claude/agents stays the user's when the project
// walk (outside a repository, up to Root) passes through it.
func TestLoadHomeInsideProject(t *testing.T) {
	home := t.TempDir()
	write(t, home, ".claude/agents/mine.md", agentMD("mine", "user", "permissionMode: acceptEdits\n"))
	write(t, home, "proj/.claude/agents/p.md", agentMD("p", "project"))
	set := agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{Root: home, Cwd: filepath.Join(home, "proj"), Home: home})
	if diff := cmp.Diff([]string{"mine user user", "p project project"}, summary(set.Agents)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if d, _ := set.Lookup("mine"); len(set.Problems) > 0 || d.PermissionMode != agentdef.PermissionAcceptEdits {
		t.Errorf("problems %q", relProblems(home, set.Problems))
	}
}

const risky = "permissionMode: acceptEdits\n" +
	"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - {type: command, command: ./check.sh}\n" +
	"mcpServers:\n  - github\n  - pw:\n      type: stdio\n      command: npx\n"

func TestLoadUntrusted(t *testing.T) {
	tmp := t.TempDir()
	mkdir(t, tmp, "repo/.git")
	write(t, tmp, "repo/.claude/agents/risky.md", agentMD("risky", "project", risky))
	write(t, tmp, "repo/.claude/agents/planner.md", agentMD("planner", "project", "permissionMode: plan\n"))
	write(t, tmp, "repo/.claude/agents/manual.md", agentMD("manual", "project", "permissionMode: manual\n"))
	write(t, tmp, "extra/.claude/agents/extra.md", agentMD("extra", "additional", "permissionMode: bypassPermissions\n"))
	write(t, tmp, "home/.claude/agents/user.md", agentMD("user", "user", risky))
	src := agentdef.Sources{
		Root: filepath.Join(tmp, "repo"), Cwd: filepath.Join(tmp, "repo"),
		AdditionalDirs: []string{filepath.Join(tmp, "extra")}, Home: filepath.Join(tmp, "home"),
	}
	c := agentdef.NewCatalog(noBuiltins)
	set := c.Load(src)
	// Problems come in directory order (the project's, then the additional
	// one's), and in file order within a file.
	want := []string{
		`repo/.claude/agents/risky.md:4:1: permissionMode "acceptEdits": ignored: the project is not trusted (tackle trust)`,
		`repo/.claude/agents/risky.md:5:1: hooks: ignored: the project is not trusted (tackle trust)`,
		`repo/.claude/agents/risky.md:12:5: mcpServers: inline server "pw": ignored: the project is not trusted (tackle trust)`,
		`extra/.claude/agents/extra.md:4:1: permissionMode "bypassPermissions": ignored: the project is not trusted (tackle trust)`,
	}
	if diff := cmp.Diff(want, relProblems(tmp, set.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	r, _ := set.Lookup("risky")
	if r.PermissionMode != "" || r.Hooks != nil || !cmp.Equal(r.MCPServers, []agentdef.MCPServer{{Name: "github"}}) || r.Prompt != "You are risky." {
		t.Errorf("risky: %+v", r)
	}
	if p, _ := set.Lookup("planner"); p.PermissionMode != agentdef.PermissionPlan {
		t.Errorf("planner: %q", p.PermissionMode)
	}
	if m, _ := set.Lookup("manual"); m.PermissionMode != agentdef.PermissionDefault {
		t.Errorf("manual: %q", m.PermissionMode)
	}
	if e, _ := set.Lookup("extra"); e.PermissionMode != "" {
		t.Errorf("extra: %q", e.PermissionMode)
	}
	// The user's own file keeps everything.
	if u, _ := set.Lookup("user"); u.PermissionMode != agentdef.PermissionAcceptEdits || u.Hooks == nil || len(u.MCPServers) != 2 {
		t.Errorf("user: %+v", u)
	}

	// Once trusted, the same cached files give everything, with no problem.
	src.Trusted = true
	trusted := c.Load(src)
	if len(trusted.Problems) > 0 || trusted.Signature == set.Signature {
		t.Errorf("problems %q, signature %s = %s", relProblems(tmp, trusted.Problems), trusted.Signature, set.Signature)
	}
	if r, _ := trusted.Lookup("risky"); r.PermissionMode != agentdef.PermissionAcceptEdits || r.Hooks == nil || len(r.MCPServers) != 2 {
		t.Errorf("trusted risky: %+v", r)
	}
	if e, _ := trusted.Lookup("extra"); e.PermissionMode != agentdef.PermissionBypass {
		t.Errorf("trusted extra: %q", e.PermissionMode)
	}
	// The definition of the untrusted load was not changed.
	if r.Hooks != nil {
		t.Error("a handed-out definition was modified")
	}
}

func TestLoadPlugin(t *testing.T) {
	tmp := t.TempDir()
	plug := filepath.Join(tmp, "my-plugin")
	write(t, plug, "agents/risky.md", agentMD("risky", "plugin", risky, "initialPrompt: Go.\n"))
	write(t, plug, "agents/nameless.md", "---\ndescription: has no name\ntools: Read\n---\nBody.\n")
	write(t, plug, "agents/README.md", "# About these agents\n")
	set := agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{Plugins: plugins(t, plug), Trusted: true})
	if diff := cmp.Diff([]string{"my-plugin:nameless plugin has no name", "my-plugin:risky plugin plugin"}, summary(set.Agents)); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	const why = "ignored: plugin agents may not set it (copy the file to .claude/agents to use it)"
	want := []string{
		"[skipped] my-plugin/agents/README.md:1:1: no name and no description in the frontmatter: the file is skipped (taken for documentation)",
		`my-plugin/agents/risky.md:4:1: permissionMode "acceptEdits": ` + why,
		`my-plugin/agents/risky.md:5:1: hooks: ` + why,
		`my-plugin/agents/risky.md:10:1: mcpServers: ` + why,
		`my-plugin/agents/risky.md:15:1: initialPrompt: ` + why,
	}
	if diff := cmp.Diff(want, relProblems(tmp, set.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	r, _ := set.Lookup("my-plugin:risky")
	if r.PermissionMode != "" || r.Hooks != nil || r.MCPServers != nil || r.InitialPrompt != "" {
		t.Errorf("risky: %+v", r)
	}
}

func TestLoadRecursive(t *testing.T) {
	tmp := t.TempDir()
	agents := filepath.Join(tmp, "proj", ".claude", "agents")
	write(t, agents, "top.md", agentMD("top", "top"))
	write(t, agents, "review/deep/inner.md", agentMD("inner", "two levels down"))
	write(t, agents, "UPPER.MD", agentMD("upper", "an upper-case extension"))
	write(t, agents, "notes.txt", "not an agent")
	write(t, agents, "README.md", "# Our agents\n\nSee the files beside this one.\n")
	write(t, agents, ".hidden/secret.md", agentMD("secret", "in a hidden directory"))
	write(t, agents, ".draft.md", agentMD("draft", "a hidden file"))
	symlink(t, "..", filepath.Join(agents, "review", "loop"))            // a loop back to agents
	symlink(t, agents, filepath.Join(agents, "review", "deep", "again")) // another
	shared := write(t, tmp, "shared/agents/linked.md", agentMD("linked", "through a symlinked directory"))
	symlink(t, filepath.Dir(shared), filepath.Join(agents, "shared"))
	symlink(t, shared, filepath.Join(agents, "file-link.md")) // the same file again, under another path
	deep := "d1/d2/d3/d4/d5/d6/d7/d8/d9"
	write(t, agents, deep+"/too-deep.md", agentMD("too-deep", "nine levels down"))
	write(t, agents, "d1/d2/d3/d4/d5/d6/d7/d8/deep-enough.md", agentMD("deep-enough", "eight levels down"))

	done := make(chan *agentdef.Set, 1)
	go func() {
		done <- agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{Root: filepath.Join(tmp, "proj"), Cwd: filepath.Join(tmp, "proj"), Trusted: true})
	}()
	var set *agentdef.Set
	select {
	case set = <-done:
	case <-time.After(10 * time.Second): // bounds a failure only: a loop never returns
		t.Fatal("discovery did not end")
	}
	want := []string{
		"deep-enough project eight levels down",
		"inner project two levels down",
		"linked project through a symlinked directory",
		"top project top",
		"upper project an upper-case extension",
	}
	if diff := cmp.Diff(want, summary(set.Agents)); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	rel := func(p string) string { return filepath.Join("proj", ".claude", "agents", p) }
	wantProblems := []string{
		rel("d1/d2/d3/d4/d5/d6/d7/d8/d9") + ": directories more than 8 levels below " + agents + " are not read",
		"[skipped] " + rel("README.md") + ":1:1: no frontmatter: an agent file starts with a --- line, then name and description; the file is skipped (taken for documentation)",
		"[skipped] " + rel("shared/linked.md") + `:2:7: agent "linked" is also defined by ` + filepath.Join(agents, "file-link.md") + ", which is used: give each file of an agents directory its own name",
	}
	if diff := cmp.Diff(wantProblems, relProblems(tmp, set.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestLoadFileLimit(t *testing.T) {
	tmp := t.TempDir()
	for i := range agentdef.MaxFiles + 5 {
		write(t, tmp, fmt.Sprintf("agents/a-%04d.md", i), agentMD(fmt.Sprintf("a-%04d", i), "one of many"))
	}
	set := agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{ManagedDir: filepath.Join(tmp, "agents")})
	want := []string{fmt.Sprintf("agents: more than %d agent files: the rest, from %s on, are not read", agentdef.MaxFiles, filepath.Join(tmp, "agents", "a-1000.md"))}
	if len(set.Agents) != agentdef.MaxFiles || !cmp.Equal(want, relProblems(tmp, set.Problems)) {
		t.Errorf("%d agents, problems %q", len(set.Agents), relProblems(tmp, set.Problems))
	}
}

// TestLoadReload: a changed file is read again on the next Load, a
// deleted one is gone, a new one appears, and nothing else is parsed.
func TestLoadReload(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "agents")
	one := write(t, dir, "one.md", agentMD("one", "first"))
	two := write(t, dir, "two.md", agentMD("two", "second"))
	c := agentdef.NewCatalog(noBuiltins)
	src := agentdef.Sources{ManagedDir: dir}
	set := c.Load(src)
	if c.Changed(src, set) {
		t.Error("Changed with nothing changed")
	}
	again := c.Load(src)
	if again.Signature != set.Signature || again.Agents[0] != set.Agents[0] || again.Agents[1] != set.Agents[1] {
		t.Error("an unchanged file gave a new definition")
	}

	if err := os.WriteFile(one, []byte(agentMD("one", "first, edited", "tools: Read\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute) // a different time, whatever the file system's granularity
	if err := os.Chtimes(one, later, later); err != nil {
		t.Fatal(err)
	}
	if !c.Changed(src, set) {
		t.Error("Changed missed an edit")
	}
	edited := c.Load(src)
	if diff := cmp.Diff([]string{"one managed first, edited", "two managed second"}, summary(edited.Agents)); diff != "" {
		t.Errorf("after an edit (-want +got):\n%s", diff)
	}
	if edited.Agents[1] != set.Agents[1] || edited.Signature == set.Signature {
		t.Error("the unchanged file was parsed again, or the signature did not change")
	}
	if set.Agents[0].Description != "first" {
		t.Error("a handed-out definition was modified")
	}

	if err := os.Remove(two); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "sub/three.md", agentMD("three", "new"))
	if !c.Changed(src, edited) {
		t.Error("Changed missed a removal")
	}
	final := c.Load(src)
	if diff := cmp.Diff([]string{"one managed first, edited", "three managed new"}, summary(final.Agents)); diff != "" {
		t.Errorf("after a removal (-want +got):\n%s", diff)
	}
	if _, ok := final.Lookup("two"); ok {
		t.Error("a deleted file is still an agent")
	}

	// A broken edit is a problem, and the fix loads again.
	write(t, dir, "one.md", "---\nname: one\n---\n")
	if set := c.Load(src); len(set.Agents) != 1 || len(set.Problems) != 1 {
		t.Errorf("agents %q problems %q", summary(set.Agents), relProblems(tmp, set.Problems))
	}
	write(t, dir, "one.md", agentMD("one", "fixed"))
	if set := c.Load(src); len(set.Agents) != 2 || len(set.Problems) != 0 {
		t.Errorf("agents %q problems %q", summary(set.Agents), relProblems(tmp, set.Problems))
	}

	// A directory that appears is seen.
	src.Home = filepath.Join(tmp, "home")
	before := c.Load(src)
	write(t, tmp, "home/.claude/agents/u.md", agentMD("u", "user"))
	if !c.Changed(src, before) || len(c.Load(src).Agents) != 3 {
		t.Error("a new agents directory was missed")
	}
}

// A planted repository's agent files that are symlinks to a device, FIFOs
// or too large are problems naming the path and the reason: discovery
// returns at once, reads none of them, and every other agent loads.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	agents := filepath.Join(proj, ".claude", "agents")
	write(t, agents, "good.md", agentMD("good", "fine"))
	symlink(t, "/dev/zero", filepath.Join(agents, "zero.md"))
	mkfifo(t, filepath.Join(agents, "fifo.md"))
	huge := write(t, agents, "huge.md", agentMD("huge", "huge"))
	if err := os.Truncate(huge, 2*agentdef.MaxFileSize); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	symlink(t, filepath.Join(tmp, "nowhere.md"), filepath.Join(agents, "dangling.md"))
	mkdir(t, agents, "dir.md") // a directory with an agent's name is walked, not read
	// An agents directory that is a FIFO is not opened.
	mkdir(t, proj, ".tackle")
	mkfifo(t, filepath.Join(proj, ".tackle", "agents"))

	done := make(chan *agentdef.Set, 1)
	go func() {
		done <- agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{Root: proj, Cwd: proj})
	}()
	var set *agentdef.Set
	select {
	case set = <-done:
	case <-time.After(10 * time.Second): // bounds a failure only: a FIFO read never returns
		t.Fatal("discovery blocked")
	}
	if diff := cmp.Diff([]string{"good project fine"}, summary(set.Agents)); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	want := []string{
		".tackle/agents: reading the agents directory: not a directory",
		`[skipped] .claude/agents/dangling.md: the agent file is a symlink to "` + filepath.Join(tmp, "nowhere.md") + `", which does not exist`,
		"[skipped] .claude/agents/fifo.md: the agent file is a FIFO, not a regular file",
		"[skipped] .claude/agents/huge.md: the agent file is 2 MiB, over the limit of 1 MiB",
		"[skipped] .claude/agents/zero.md: the agent file is a character device, not a regular file (it is a symlink to /dev/zero)",
	}
	if diff := cmp.Diff(want, relProblems(proj, set.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestLoadVoltagent: the real files load from an agents directory; the
// README beside them is the one problem.
func TestLoadVoltagent(t *testing.T) {
	dir := filepath.Join("testdata", "voltagent")
	set := agentdef.NewCatalog(nil).Load(agentdef.Sources{ManagedDir: dir})
	want := []string{"[skipped] " + filepath.Join(dir, "README.md") + ":1:1: no frontmatter: an agent file starts with a --- line, then name and description; the file is skipped (taken for documentation)"}
	if diff := cmp.Diff(want, relProblems("", set.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(set.Agents) != 15 { // 12 and the 3 built-ins
		t.Fatalf("%d agents: %q", len(set.Agents), summary(set.Agents))
	}
	for _, d := range set.Agents {
		if d.Source != agentdef.SourceManaged && d.Source != agentdef.SourceBuiltin {
			t.Errorf("%s: source %q", d.Name, d.Source)
		}
	}
	if d, ok := set.Lookup("golang-pro"); !ok || d.Model != "sonnet" || d.Path != filepath.Join(dir, "golang-pro.md") {
		t.Errorf("golang-pro: %+v", d)
	}
}

func TestBuiltins(t *testing.T) {
	b := agentdef.Builtins()
	if len(b) != 3 || b[0].Name != agentdef.GeneralPurpose || b[1].Name != agentdef.Explore || b[2].Name != agentdef.Plan {
		t.Fatalf("%q", summary(b))
	}
	if gp := b[0]; gp.Tools != nil || !gp.AllTools() || gp.OneShot || gp.ReadOnly || gp.OmitClaudeMd {
		t.Errorf("general-purpose: %+v", gp)
	}
	for _, d := range b {
		if d.Source != agentdef.SourceBuiltin || d.Path != "" || len(d.Description) < 150 || len(d.Prompt) < 1000 || strings.TrimSpace(d.Prompt) != d.Prompt {
			t.Errorf("%s: source %q path %q, description %d, prompt %d bytes", d.Name, d.Source, d.Path, len(d.Description), len(d.Prompt))
		}
		if d.Name == agentdef.GeneralPurpose {
			continue
		}
		if !cmp.Equal(d.Tools, []string{"Read", "Glob", "Grep", "Bash", "WebFetch", "WebSearch", "ToolSearch"}) || !d.ReadOnly || !d.OneShot || !d.OmitClaudeMd {
			t.Errorf("%s: %+v", d.Name, d)
		}
		if !strings.Contains(d.Prompt, "Do not create, change, move, copy or delete any file") {
			t.Errorf("%s: the prompt does not forbid changes", d.Name)
		}
	}
	// Builtins returns copies: changing one changes no other.
	b[1].Tools[0] = "Write"
	if agentdef.Builtins()[1].Tools[0] != "Read" {
		t.Error("Builtins shares its slices")
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
		src  agentdef.Sources
		want []string
	}{
		{"up to the repository", agentdef.Sources{Root: j("repo", "a"), Cwd: j("repo", "a", "b")}, []string{j("repo", "a", "b"), j("repo", "a"), j("repo")}},
		{"worktree .git file", agentdef.Sources{Cwd: j("worktree", "x")}, []string{j("worktree", "x"), j("worktree")}},
		{"no repository: up to root", agentdef.Sources{Root: j("plain"), Cwd: j("plain", "a", "b")}, []string{j("plain", "a", "b"), j("plain", "a"), j("plain")}},
		{"no repository, cwd outside root", agentdef.Sources{Root: j("repo"), Cwd: j("plain", "a")}, []string{j("plain", "a")}},
		{"root only", agentdef.Sources{Root: j("plain", "a")}, []string{j("plain", "a")}},
		{"nothing", agentdef.Sources{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, agentdef.ProjectDirs(tt.src)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadConcurrent: Loads of different sessions share one catalog
// (run with -race).
func TestLoadConcurrent(t *testing.T) {
	tmp := t.TempDir()
	mkdir(t, tmp, "a/.git")
	mkdir(t, tmp, "b/.git")
	for i := range 20 {
		write(t, tmp, fmt.Sprintf("a/.claude/agents/x%d.md", i), agentMD(fmt.Sprintf("x%d", i), "a", "permissionMode: auto\n"))
		write(t, tmp, fmt.Sprintf("b/.claude/agents/x%d.md", i), agentMD(fmt.Sprintf("x%d", i), "b"))
	}
	c := agentdef.NewCatalog(noBuiltins)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(tmp, "a")
			if i%2 == 1 {
				dir = filepath.Join(tmp, "b")
			}
			for range 20 {
				set := c.Load(agentdef.Sources{Root: dir, Cwd: dir, Trusted: i%4 < 2})
				if len(set.Agents) != 20 {
					t.Errorf("%d agents", len(set.Agents))
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkLoadUnchanged is what the daemon pays to look for changes
// before each use: a Load of the 12 real agents (and the built-ins) with
// nothing changed, in a project of the usual depth.
func BenchmarkLoadUnchanged(b *testing.B) {
	tmp := b.TempDir()
	mkdir(b, tmp, "repo/.git")
	entries, err := os.ReadDir(filepath.Join("testdata", "voltagent"))
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" {
			data, err := os.ReadFile(filepath.Join("testdata", "voltagent", e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			write(b, tmp, "repo/.claude/agents/"+e.Name(), string(data))
		}
	}
	src := agentdef.Sources{
		Root: filepath.Join(tmp, "repo"), Cwd: mkdir(b, tmp, "repo/cmd/tool"),
		ConfigHome: filepath.Join(tmp, "cfg"), Home: filepath.Join(tmp, "home"), Trusted: true,
	}
	c := agentdef.NewCatalog(nil)
	if set := c.Load(src); len(set.Agents) != 15 {
		b.Fatalf("%d agents", len(set.Agents))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Load(src)
	}
}

// BenchmarkLoadCold is the first Load of the same files: every one parsed.
func BenchmarkLoadCold(b *testing.B) {
	src := agentdef.Sources{ManagedDir: filepath.Join("testdata", "voltagent")}
	b.ReportAllocs()
	for b.Loop() {
		agentdef.NewCatalog(nil).Load(src)
	}
}
