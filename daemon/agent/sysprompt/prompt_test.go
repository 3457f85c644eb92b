package sysprompt

import (
	"context"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// headings returns the lines of text that start with prefix ("# ", "## "),
// outside fenced code blocks.
func headings(text, prefix string) []string {
	var out []string
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		switch {
		case fence != "":
			if l == fence {
				fence = ""
			}
		case strings.HasPrefix(l, "```"):
			fence = l
		case strings.HasPrefix(l, prefix):
			out = append(out, l)
		}
	}
	return out
}

// section returns the text under heading, up to the next heading of the
// same level.
func section(text, heading string) string {
	_, after, ok := strings.Cut(text, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if i := strings.Index(after, "\n"+level); i >= 0 {
		after = after[:i]
	}
	return after
}

func testInfo() Info {
	return Info{
		Cwd:         "/p/sub",
		WorkingDirs: []string{"/q", "/r"},
		Platform:    "linux",
		OSVersion:   "Linux 6.8.0",
		Now:         time.Date(2026, 5, 1, 23, 30, 0, 0, time.UTC),
		GitRepo:     true,
		GitStatus:   "## main...origin/main [ahead 1]\n M a.go\n```odd",
		Model:       "claude-test-1",
	}
}

func testMemory() []MemoryFile {
	return []MemoryFile{
		{Path: "/h/.claude/CLAUDE.md", Scope: ScopeUser, Content: "Prefer tabs.\n"},
		{Path: "/p/CLAUDE.md", Scope: ScopeProject, Content: "Run make test.\n@docs/style.md\n"},
		{Path: "/p/docs/style.md", Scope: ScopeProject, ImportedBy: "/p/CLAUDE.md", Content: "Short functions."},
		{Path: "/p/AGENTS.md", Scope: ScopeProject, Content: "  \n\n"}, // blank: left out
		{Path: "/p/CLAUDE.local.md", Scope: ScopeLocal, Content: "My sandbox is at :8080.\n", Cut: 120},
		{Path: "/p/sub/CLAUDE.md", Scope: ScopeProject, Cut: 40},
	}
}

func TestBuild(t *testing.T) {
	got := Build(testInfo(), testMemory())

	if !strings.HasPrefix(got, "You are a coding agent working through tackle") {
		t.Errorf("the prompt starts %q", got[:min(80, len(got))])
	}
	wantTop := []string{"# Tools and permissions", "# Working on code", "# Talking to the user", "# Environment", "# Memory files"}
	if diff := cmp.Diff(wantTop, headings(got, "# ")); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	for _, must := range []string{"permission pipeline", "denied", "do not retry", "Read a file before you edit it", "concise"} {
		if !strings.Contains(section(got, "# Tools and permissions")+section(got, "# Working on code")+section(got, "# Talking to the user")+got[:200], must) {
			t.Errorf("the instructions do not mention %q", must)
		}
	}

	env := section(got, "# Environment")
	for _, line := range []string{
		"- Working directory: /p/sub\n",
		"- Other working directories (your file tools reach these too): /q, /r\n",
		"- Platform: linux (Linux 6.8.0)\n",
		"- Today's date: 2026-05-01 (Friday)\n",
		"- Git repository: yes\n",
		"- Model (the one you are running as): claude-test-1\n",
		// A line of the status starts with ```, so its fence is longer.
		"\n````\n## main...origin/main [ahead 1]\n M a.go\n```odd\n````\n",
	} {
		if !strings.Contains(env, line) {
			t.Errorf("the environment lacks %q:\n%s", line, env)
		}
	}

	wantFiles := []string{
		"## /h/.claude/CLAUDE.md (the user's own instructions, for all their projects)",
		"## /p/CLAUDE.md (the project's instructions, kept in the repository for everyone working on it)",
		"## /p/docs/style.md (the project's instructions, kept in the repository for everyone working on it; imported by /p/CLAUDE.md)",
		"## /p/CLAUDE.local.md (the user's private instructions for this project, not checked in)",
		"## /p/sub/CLAUDE.md (the project's instructions, kept in the repository for everyone working on it)",
	}
	if diff := cmp.Diff(wantFiles, headings(got, "## ")); diff != "" {
		t.Errorf("memory headings (-want +got):\n%s", diff)
	}
	for heading, body := range map[string]string{
		wantFiles[0]: "\nPrefer tabs.\n",
		wantFiles[1]: "\nRun make test.\n@docs/style.md\n",
		wantFiles[2]: "\nShort functions.\n",
		wantFiles[3]: "\nMy sandbox is at :8080.\n\n[The rest of this file is left out: the memory files are over tackle's budget.]\n",
		wantFiles[4]: "\n[This file is left out: the memory files are over tackle's budget.]\n",
	} {
		if s := section(got, heading); s != body {
			t.Errorf("under %q: %q, want %q", heading, s, body)
		}
	}

	if regexp.MustCompile(`(?m)[ \t]+$`).MatchString(got) {
		t.Error("the prompt has trailing white space")
	}
	if !strings.HasSuffix(got, "\n") || strings.HasSuffix(got, "\n\n") {
		t.Errorf("the prompt ends %q", got[len(got)-20:])
	}
	if again := Build(testInfo(), testMemory()); again != got {
		t.Error("Build is not deterministic")
	}
}

// What Info leaves empty, Build leaves out.
func TestBuildMinimal(t *testing.T) {
	got := Build(Info{Cwd: "/p"}, nil)
	if diff := cmp.Diff([]string{"# Tools and permissions", "# Working on code", "# Talking to the user", "# Environment"}, headings(got, "# ")); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	env := section(got, "# Environment")
	want := "\n- Working directory: /p\n- Platform: " + runtime.GOOS + "\n- Git repository: no\n"
	if env != want {
		t.Errorf("environment = %q, want %q", env, want)
	}
	if strings.Contains(got, "```") {
		t.Error("a git status block without a status")
	}
	// Only blank memory files: no memory section.
	if got := Build(Info{Cwd: "/p"}, []MemoryFile{{Path: "/p/CLAUDE.md", Scope: ScopeProject, Content: "\n"}}); strings.Contains(got, "# Memory files") {
		t.Error("a memory section for a blank file")
	}
}

// Memory's files go into Build as they are, in order.
func TestBuildFromMemory(t *testing.T) {
	tr := newTree(t)
	files, _ := Memory(tr.options())
	got := Build(Info{Cwd: tr.cwd, GitRepo: true}, files)
	var paths []string
	for _, h := range headings(got, "## ") {
		p, _, _ := strings.Cut(strings.TrimPrefix(h, "## "), " (")
		rel, _ := filepath.Rel(tr.base, p)
		paths = append(paths, rel)
	}
	want := []string{
		"home/.claude/CLAUDE.md", "home/notes/user-extra.md", "config/tackle/CLAUDE.md",
		"work/repo/CLAUDE.md", "work/repo/docs/style.md", "work/repo/a.md", "work/repo/b.md", "work/repo/AGENTS.md",
		"work/repo/.claude/CLAUDE.md", "work/repo/CLAUDE.local.md", "work/repo/sub/.tackle/CLAUDE.md",
		"work/repo/sub/deep/CLAUDE.md", "work/repo/sub/deep/AGENTS.md",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("memory headings (-want +got):\n%s", diff)
	}
	if !strings.Contains(got, "\n# Root\n") {
		t.Error("the root CLAUDE.md's content is missing")
	}
}

func TestGather(t *testing.T) {
	dir := gitRepo(t)
	info := Gather(context.Background(), dir)
	if info.Cwd != dir || !info.GitRepo || info.GitStatus != "## main" || info.Platform != runtime.GOOS || info.Now.IsZero() {
		t.Errorf("Gather = %+v", info)
	}
	if runtime.GOOS == "linux" && !strings.HasPrefix(info.OSVersion, "Linux ") {
		t.Errorf("OSVersion = %q", info.OSVersion)
	}
}
