package agentdef

import (
	_ "embed"
	"strings"
)

// Built-in agent types (agent.md section 5). Claude Code's others —
// claude, statusline-setup, claude-code-guide — are about Claude Code
// itself, and tackle has no counterpart.
const (
	GeneralPurpose = "general-purpose"
	Explore        = "Explore"
	Plan           = "Plan"
)

// The system prompts of the built-ins, next to them as Markdown.
var (
	//go:embed builtin/general-purpose.md
	generalPurposePrompt string
	//go:embed builtin/explore.md
	explorePrompt string
	//go:embed builtin/plan.md
	planPrompt string
)

// readOnlyTools are the tools of Explore and Plan: looking, never changing
// (the daemon holds their Bash to read-only commands).
var readOnlyTools = []string{"Read", "Glob", "Grep", "Bash", "WebFetch", "WebSearch", "ToolSearch"}

// Builtins returns new copies of the built-in agent types: general-purpose
// (every tool) and the read-only, one-shot Explore and Plan, which also
// leave CLAUDE.md out of their context. A file may shadow general-purpose;
// Explore and Plan cannot be redefined by a file, whose names are
// lowercase.
func Builtins() []*Definition {
	return []*Definition{
		{
			Name: GeneralPurpose,
			Description: "An all-round agent for work that takes many steps: researching a question across the codebase, " +
				"tracking down where something is defined or used, or carrying out a change that spans several files. " +
				"Delegate to it when a search may need several attempts or would fill your own context; it has the same tools you have.",
			Prompt: strings.TrimSpace(generalPurposePrompt),
			Source: SourceBuiltin,
		},
		{
			Name: Explore,
			Description: "A fast, read-only agent for finding your way around a codebase: locating files by name pattern, " +
				"searching code for symbols or text, and answering how something works. It cannot change files. " +
				`Say how far it should go: "quick" for a first look, "medium" for a moderate search, ` +
				`"very thorough" for a sweep across every location and naming convention.`,
			Tools:        append([]string(nil), readOnlyTools...),
			Prompt:       strings.TrimSpace(explorePrompt),
			Source:       SourceBuiltin,
			OneShot:      true,
			ReadOnly:     true,
			OmitClaudeMd: true,
		},
		{
			Name: Plan,
			Description: "A read-only software architect that studies the relevant code and returns a step-by-step plan for a change: " +
				"the files and functions to touch, the order of the work, the trade-offs and the risks. " +
				"Use it when a task needs a design before code; it changes nothing itself.",
			Tools:        append([]string(nil), readOnlyTools...),
			Prompt:       strings.TrimSpace(planPrompt),
			Source:       SourceBuiltin,
			OneShot:      true,
			ReadOnly:     true,
			OmitClaudeMd: true,
		},
	}
}
