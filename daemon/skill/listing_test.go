package skill_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/skill"
)

func TestListing(t *testing.T) {
	sk := func(name, desc, when string) *skill.Skill {
		return &skill.Skill{Name: name, Description: desc, WhenToUse: when, ModelInvocable: true, UserInvocable: true}
	}
	hidden := sk("hidden", "never listed", "")
	hidden.ModelInvocable = false
	hinted := sk("hinted", "Takes a file", "")
	hinted.ArgumentHint = "<file>"
	skills := []*skill.Skill{
		sk("delta", strings.Repeat("d", 100), ""),
		sk("alpha", "Alpha\n  does   things", "when alpha"),
		sk("charlie", strings.Repeat("c", 100), ""),
		hidden,
		sk("bravo", strings.Repeat("b", 100), "when bravo"),
		hinted,
	}
	uses := map[string]int{"alpha": 5, "bravo": 1, "charlie": 0, "delta": 0, "hinted": 9}
	usage := func(name string) int { return uses[name] }
	full := []string{
		"- alpha: Alpha does things (when alpha)",
		"- bravo: " + strings.Repeat("b", 100) + " (when bravo)",
		"- charlie: " + strings.Repeat("c", 100),
		"- delta: " + strings.Repeat("d", 100),
		"- hinted: Takes a file [args: <file>]",
	}
	size := func(lines []string) int {
		return utf8.RuneCountInString(skill.ListingIntro) + len(strings.Join(lines, "\n")) + 1
	}
	tests := []struct {
		name   string
		budget int
		usage  func(string) int
		want   []string
	}{
		{"fits", size(full), usage, full},
		{"one char short: least used, alphabetically last, loses first", size(full) - 1, usage,
			[]string{full[0], full[1], full[2], "- delta", full[4]}},
		{"next: charlie", size(full) - 110, usage,
			[]string{full[0], full[1], "- charlie", "- delta", full[4]}},
		{"then bravo (used once)", size(full) - 220, usage,
			[]string{full[0], "- bravo", "- charlie", "- delta", full[4]}},
		{"names always kept", 1, usage,
			[]string{"- alpha", "- bravo", "- charlie", "- delta", "- hinted"}},
		{"no usage: reverse alphabetical", size(full) - 1, nil,
			[]string{full[0], full[1], full[2], full[3], "- hinted"}},
		{"default budget", 0, usage, full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := skill.Listing(skills, tt.budget, tt.usage)
			body, ok := strings.CutPrefix(got, skill.ListingIntro)
			if !ok {
				t.Fatalf("no intro: %q", got)
			}
			if diff := cmp.Diff(tt.want, strings.Split(strings.TrimSuffix(body, "\n"), "\n")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.budget > 1 && utf8.RuneCountInString(got) > tt.budget {
				t.Errorf("listing is %d chars, over the budget %d", utf8.RuneCountInString(got), tt.budget)
			}
		})
	}
	if got := skill.Listing([]*skill.Skill{hidden}, 0, nil); got != skill.ListingIntro+"(none)\n" {
		t.Errorf("empty listing %q", got)
	}
}

// TestListingThousand: 1,000 skills in the default budget keep every name.
func TestListingThousand(t *testing.T) {
	var skills []*skill.Skill
	for i := range 1000 {
		skills = append(skills, &skill.Skill{Name: "s" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i/26), Description: "A description of some length for this skill", ModelInvocable: true})
	}
	got := skill.Listing(skills, skill.DefaultBudget, nil)
	if n := strings.Count(strings.TrimPrefix(got, skill.ListingIntro), "- "); n != 1000 {
		t.Errorf("%d lines", n)
	}
}
