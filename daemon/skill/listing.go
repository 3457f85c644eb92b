package skill

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// DefaultBudget is the listing budget in characters when the setting
// skillListingBudget is not set (reference.md section 6).
const DefaultBudget = 8000

// ListingIntro opens the Skill tool's description, before the list of skills.
const ListingIntro = `Load a skill: instructions for a particular kind of task, written by the user, the project or tackle.

When the task at hand matches a skill's description below, call this tool with {"skill": "<name>"} before doing the work, adding "args" when the skill takes arguments (the text after the skill's name, as a person would type it after /<name>). The result holds the skill's instructions: follow them.

- Only the skills listed here exist: do not guess names.
- Do not load a skill again when its instructions are already in the conversation.
- When a person types /<name>, they mean the skill of that name.

Available skills:
`

// Listing is the Skill tool's description: ListingIntro and one line per
// model-invocable skill of skills, sorted by name — "- name: description
// (when_to_use)". skills should be the active ones (View.ModelSkills).
// When the text would exceed budget characters, skills lose their
// descriptions, least used first (usage(name) smallest; ties: the
// alphabetically last first), until it fits; names are always kept, so the
// text may still exceed a tiny budget. usage may be nil.
func Listing(skills []*Skill, budget int, usage func(name string) int) string {
	if budget <= 0 {
		budget = DefaultBudget
	}
	var list []*Skill
	for _, sk := range skills {
		if sk.ModelInvocable {
			list = append(list, sk)
		}
	}
	if len(list) == 0 {
		return ListingIntro + "(none)\n"
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	full := make([]string, len(list))
	short := make([]bool, len(list))
	total := utf8.RuneCountInString(ListingIntro)
	for i, sk := range list {
		full[i] = listingLine(sk)
		total += utf8.RuneCountInString(full[i]) + 1
	}
	if total > budget {
		order := make([]int, len(list))
		uses := make([]int, len(list))
		for i := range order {
			order[i] = i
			if usage != nil {
				uses[i] = usage(list[i].Name)
			}
		}
		sort.SliceStable(order, func(a, b int) bool {
			i, j := order[a], order[b]
			if uses[i] != uses[j] {
				return uses[i] < uses[j]
			}
			return list[i].Name > list[j].Name
		})
		for _, i := range order {
			if total <= budget {
				break
			}
			total -= utf8.RuneCountInString(full[i]) - utf8.RuneCountInString("- "+list[i].Name)
			short[i] = true
		}
	}
	var b strings.Builder
	b.WriteString(ListingIntro)
	for i, sk := range list {
		if short[i] {
			b.WriteString("- " + sk.Name)
		} else {
			b.WriteString(full[i])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// listingLine is "- name: description (when_to_use)", on one line.
func listingLine(sk *Skill) string {
	line := "- " + sk.Name
	desc := oneLine(sk.Description)
	when := oneLine(sk.WhenToUse)
	switch {
	case desc != "" && when != "":
		line += ": " + desc + " (" + when + ")"
	case desc != "":
		line += ": " + desc
	case when != "":
		line += ": (" + when + ")"
	}
	if sk.ArgumentHint != "" {
		line += " [args: " + oneLine(sk.ArgumentHint) + "]"
	}
	return line
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
