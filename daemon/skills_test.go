package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// A skill's allowed-tools hold for the turn that invoked it and end with
// the client's EndTurn; invoking such a skill is itself approved first.
func TestSkillGrantsEndWithTheTurn(t *testing.T) {
	d := daemontest.Start(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".claude", "skills", "toucher", "SKILL.md"),
		"---\ndescription: Touches files\nallowed-tools: Bash(touch:*)\n---\nTouch what you need.\n")
	id := newSession(t, d, root, "")
	s := attach(t, d, id)

	// dontAsk denies what would ask: invoking a granting skill asks.
	if tr := s.call("Skill", `{"skill":"toucher"}`, "dontAsk"); tr.result.GetStatus() != "denied" {
		t.Fatalf("a granting skill in dontAsk: %s %q", tr.result.GetStatus(), resultText(tr.result))
	}
	if tr := s.call("Bash", `{"command":"touch before.txt"}`, "dontAsk"); tr.result.GetStatus() != "denied" {
		t.Fatalf("touch before the skill: %s", tr.result.GetStatus())
	}
	tr := s.call("Skill", `{"skill":"toucher"}`, "bypassPermissions")
	if tr.result.GetStatus() != "completed" || !strings.Contains(resultText(tr.result), "Touch what you need.") {
		t.Fatalf("Skill: %s %q", tr.result.GetStatus(), resultText(tr.result))
	}
	if tr := s.call("Bash", `{"command":"touch granted.txt"}`, "dontAsk"); tr.result.GetStatus() != "completed" {
		t.Fatalf("touch within the skill's turn: %s %q", tr.result.GetStatus(), resultText(tr.result))
	}
	if tr := s.call("Bash", `{"command":"rm granted.txt"}`, "dontAsk"); tr.result.GetStatus() != "denied" {
		t.Fatalf("the grant widened beyond allowed-tools: rm %s", tr.result.GetStatus())
	}
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_EndTurn{EndTurn: &tacklev1.EndTurn{SessionId: id}}})
	if tr := s.call("Bash", `{"command":"touch after.txt"}`, "dontAsk"); tr.result.GetStatus() != "denied" {
		t.Fatalf("touch after the turn ended: %s", tr.result.GetStatus())
	}
}

// A skill's frontmatter hooks run for the rest of the session once it was
// invoked, and only in that session.
func TestSkillHooksRegisterForTheSession(t *testing.T) {
	d := daemontest.Start(t)
	root := t.TempDir()
	mark := filepath.Join(t.TempDir(), "hook-ran")
	writeFile(t, filepath.Join(d.Home(), ".claude", "skills", "watcher", "SKILL.md"),
		"---\ndescription: Watches Bash\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: \"cat > "+mark+"\"\n---\nWatching.\n")
	id := newSession(t, d, root, "")
	s := attach(t, d, id)
	if tr := s.call("Bash", `{"command":"true"}`, "bypassPermissions"); tr.result.GetStatus() != "completed" {
		t.Fatal(resultText(tr.result))
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the skill's hook ran before the skill was invoked")
	}
	if tr := s.call("Skill", `{"skill":"watcher"}`, "bypassPermissions"); tr.result.GetStatus() != "completed" {
		t.Fatalf("Skill: %s", resultText(tr.result))
	}
	if tr := s.call("Bash", `{"command":"true"}`, "bypassPermissions"); tr.result.GetStatus() != "completed" {
		t.Fatal(resultText(tr.result))
	}
	b, err := os.ReadFile(mark)
	if err != nil || !strings.Contains(string(b), `"tool_name":"Bash"`) {
		t.Fatalf("the skill's PreToolUse hook did not run: %q %v", b, err)
	}
	// Another session of the same project does not have it.
	os.Remove(mark)
	other := attach(t, d, newSession(t, d, t.TempDir(), ""))
	if tr := other.call("Bash", `{"command":"true"}`, "bypassPermissions"); tr.result.GetStatus() != "completed" {
		t.Fatal(resultText(tr.result))
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("another session ran the skill's hook")
	}
}

// A person's invocation (RenderSkill) grants the skill's allowed-tools for
// the turn too.
func TestRenderSkillGrants(t *testing.T) {
	d := daemontest.Start(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".claude", "skills", "toucher", "SKILL.md"),
		"---\ndescription: Touches files\nallowed-tools: Bash(touch:*)\n---\nTouch $ARGUMENTS.\n")
	id := newSession(t, d, root, "")
	s := attach(t, d, id)
	res, err := d.Client().RenderSkill(t.Context(), &tacklev1.RenderSkillRequest{SessionId: id, Name: "toucher", Args: "a.txt"})
	if err != nil || res.GetText() != "Touch a.txt.\n" || len(res.GetAllowedTools()) != 1 {
		t.Fatalf("RenderSkill: %+v %v", res, err)
	}
	if tr := s.call("Bash", `{"command":"touch a.txt"}`, "dontAsk"); tr.result.GetStatus() != "completed" {
		t.Fatalf("touch after a person invoked the skill: %s", tr.result.GetStatus())
	}
	if _, err := d.Client().RenderSkill(t.Context(), &tacklev1.RenderSkillRequest{SessionId: id, Name: "nope"}); err == nil {
		t.Error("an unknown skill rendered")
	}
}
