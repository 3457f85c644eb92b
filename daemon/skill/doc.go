// Package skill owns tackle's skills: SKILL.md files (and legacy command
// files) found in the places reference.md section 6 names, parsed once and
// cached daemon-wide, and the Skill tool through which the model loads one.
//
// A skill is instructions, never a capability: loading one changes what the
// model reads, not what it may do. The package parses (parse.go), discovers
// the static sources of a session (discover.go), follows what a session
// touches to load nested skill directories and activate skills with `paths`
// (dynamic.go), assembles what a session sees (view.go), writes the Skill
// tool's listing within a budget (listing.go), expands a skill's body
// (render.go) and implements the tool (tool.go; alias SlashCommand, Claude
// Code's tool for running a custom slash command). Every skill and command
// file is read through internal/safefile: a FIFO, a device, a directory or
// a file over MaxFileSize is a Problem naming the path and the reason, found
// without blocking, and hides no other skill.
//
// It must not know about sessions, permissions or the daemon: whatever needs
// them — the session's view, temporary allow rules for `allowed-tools`,
// per-session hooks, usage counts, the pipeline that runs !`cmd` lines —
// comes in through ToolOptions callbacks and tool.Call.Nested. Nothing here
// grants a permission by itself.
//
// Built-in skills live in builtin/<name>/SKILL.md and are embedded in the
// binary.
package skill
