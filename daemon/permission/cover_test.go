package permission

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// coverTree is a project with a denied file, a hard link to it outside the
// denied directory, and an ordinary file.
func coverTree(t *testing.T) (root string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"secrets", "src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secrets/k", "src/a.go"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("pw\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "secrets/k"), filepath.Join(root, "src/k2")); err != nil {
		t.Fatal(err)
	}
	return root
}

func decideIn(root, mode string, rules *Rules, r Request) Decision {
	r.Cwd, r.Root, r.Mode, r.Rules = root, root, mode, rules
	if r.Access.Kind != tool.AccessExec {
		r.Access.InsideWorkingDirs = true // every path of coverTree is
	}
	r.WorkingDirs = []string{root}
	return NewEngine().Decide(context.Background(), r)
}

func TestTreeReadsAskWhenADenyRuleCoversPathsBelow(t *testing.T) {
	root := coverTree(t)
	deny := testRules(t, "deny:Read(./secrets/**)", "allow:Bash(grep *)", "allow:Bash(git *)")
	src, secrets := filepath.Join(root, "src"), filepath.Join(root, "secrets")
	grepR := func(dir string) Request {
		r := withReads(bashReq("grep -r pw "+dir), dir)
		r.Attrs.ReadOnly = true
		r.Access.InsideWorkingDirs = true
		r.Access.CommandsReadOnly = []bool{true}
		r.Access.RecursiveReads = []string{dir}
		return r
	}
	gitLog := bashReq("git log -p")
	gitLog.Attrs.ReadOnly = true
	gitLog.Access.InsideWorkingDirs = true
	gitLog.Access.RepoReads = []string{root}

	for _, tc := range []struct {
		name string
		mode string
		r    Request
		want Verdict
	}{
		{"grep -r over the project", "", grepR(root), Ask},
		{"even in bypassPermissions", ModeBypassPermissions, grepR(root), Ask},
		{"dontAsk denies", ModeDontAsk, grepR(root), Deny},
		{"a tree beside the denied one", "", grepR(src), Allow},
		{"the denied directory itself", "", grepR(secrets), Deny},
		{"git log -p of the repository", "", gitLog, Ask},
	} {
		if d := decideIn(root, tc.mode, deny, tc.r); d.Verdict != tc.want {
			t.Errorf("%s: %s (%s: %s), want %s", tc.name, d.Verdict, d.By, d.Reason, tc.want)
		}
	}
	// Without a Read rule the same reads are decided as before.
	none := testRules(t, "deny:Bash(rm *)")
	if d := decideIn(root, "", none, grepR(root)); d.Verdict != Allow {
		t.Errorf("grep -r with no Read rule: %s (%s)", d.Verdict, d.Reason)
	}
	if d := decideIn(root, "", none, gitLog); d.Verdict != Allow {
		t.Errorf("git log -p with no Read rule: %s (%s)", d.Verdict, d.Reason)
	}
	// An unanchored rule (`**/.env`) may match anywhere: the tree asks.
	env := testRules(t, "deny:Read(.env)")
	if d := decideIn(root, "", env, grepR(src)); d.Verdict != Ask {
		t.Errorf("grep -r with an unanchored deny: %s (%s)", d.Verdict, d.Reason)
	}
}

func TestHardLinkToADeniedFileIsTheFile(t *testing.T) {
	root := coverTree(t)
	link := filepath.Join(root, "src/k2")
	rules := testRules(t, "deny:Read(./secrets/**)")
	if d := decideIn(root, "", rules, readReq("Read", link)); d.Verdict != Deny {
		t.Errorf("Read of a hard link to a denied file: %s (%s)", d.Verdict, d.Reason)
	}
	cat := withReads(bashReq("cat src/k2"), link)
	if d := decideIn(root, ModeBypassPermissions, rules, cat); d.Verdict != Deny {
		t.Errorf("cat of a hard link to a denied file: %s (%s)", d.Verdict, d.Reason)
	}
	if d := decideIn(root, "", rules, readReq("Read", filepath.Join(root, "src/a.go"))); d.Verdict != Allow {
		t.Errorf("Read of an ordinary file: %s (%s)", d.Verdict, d.Reason)
	}
	edit := testRules(t, "deny:Edit(./secrets/**)")
	if d := decideIn(root, ModeAcceptEdits, edit, editReq("Write", link)); d.Verdict != Deny {
		t.Errorf("Write to a hard link of an Edit-denied file: %s (%s)", d.Verdict, d.Reason)
	}
	if d := decideIn(root, "", edit, readReq("Read", link)); d.Verdict != Allow {
		t.Errorf("an Edit deny does not cover reading the link: %s (%s)", d.Verdict, d.Reason)
	}
}

func TestRedirectsAreEditsNotTheCommands(t *testing.T) {
	root := coverTree(t)
	x := filepath.Join(root, "x")
	echo := func() Request {
		r := withWrites(bashReq("echo a"), x)
		r.Access.Redirects = []string{x}
		r.Access.CommandsReadOnly = []bool{true}
		return r
	}
	for _, tc := range []struct {
		name  string
		rules []string
		mode  string
		want  Verdict
	}{
		{"an allow rule for echo", []string{"allow:Bash(echo:*)"}, "", Ask},
		{"allow Bash(*)", []string{"allow:Bash(*)"}, "", Ask},
		{"and an Edit allow rule", []string{"allow:Bash(echo:*)", "allow:Edit(./x)"}, "", Allow},
		{"in acceptEdits", []string{"allow:Bash(echo:*)"}, ModeAcceptEdits, Allow},
		{"no rule in acceptEdits", nil, ModeAcceptEdits, Allow},
		{"no rule", nil, "", Ask},
	} {
		if d := decideIn(root, tc.mode, testRules(t, tc.rules...), echo()); d.Verdict != tc.want {
			t.Errorf("%s: %s (%s: %s), want %s", tc.name, d.Verdict, d.By, d.Reason, tc.want)
		}
	}
	// A command's own write (cp's target) stays covered by its allow rule.
	cp := withWrites(bashReq("cp src/a.go y"), filepath.Join(root, "y"))
	if d := decideIn(root, "", testRules(t, "allow:Bash(cp *)"), cp); d.Verdict != Allow {
		t.Errorf("cp under Bash(cp *): %s (%s)", d.Verdict, d.Reason)
	}
}

func TestReadGuard(t *testing.T) {
	root := coverTree(t)
	if g := testRules(t, "deny:Bash(rm *)", "deny:Edit(./x)").ReadGuard(root, root, ""); g != nil {
		t.Fatalf("a guard without Read deny rules: %v", g)
	}
	g := testRules(t, "deny:Read(./secrets/**)").ReadGuard(root, root, "")
	if g == nil {
		t.Fatal("no guard for a Read deny rule")
	}
	for p, want := range map[string]bool{
		filepath.Join(root, "secrets"):     true, // `/**` matches no segment too: the walk skips the directory whole
		filepath.Join(root, "secrets/k"):   true,
		filepath.Join(root, "secrets/a/b"): true,
		filepath.Join(root, "src/k2"):      false, // by name; DeniedFile finds it
		filepath.Join(root, "src/a.go"):    false,
	} {
		if got := g.Denied(p); got != want {
			t.Errorf("Denied(%s) = %v, want %v", p, got, want)
		}
	}
	id := func(p string) (uint64, uint64) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return uint64(st.Dev), st.Ino //nolint:unconvert // Dev's type differs by platform
	}
	if !g.DeniedFile(id(filepath.Join(root, "src/k2"))) {
		t.Error("DeniedFile of the hard link is false")
	}
	if g.DeniedFile(id(filepath.Join(root, "src/a.go"))) {
		t.Error("DeniedFile of an ordinary file is true")
	}
	var _ tool.ReadGuard = g
}
