// Package sysprompt writes the system prompt of tackle's query loop: tackle's
// own text about who the agent is and how it works with the permission
// pipeline, an environment block (working directories, platform, date, git
// status, model), and the project's memory files.
//
// It owns finding and reading the memory files as Claude Code does —
// ~/.claude/CLAUDE.md (and tackle's $XDG_CONFIG_HOME/tackle/CLAUDE.md), then
// CLAUDE.md, .claude/CLAUDE.md, CLAUDE.local.md, AGENTS.md and
// .tackle/CLAUDE.md in every directory from the repository root down to the
// cwd, with their @path imports — and the memory budget. Every file is read
// through internal/safefile, so a planted FIFO, device or huge file is a
// Problem, never a hang. It also owns the one git command the prompt needs
// (GitStatus), which never lets a repository's own config run a program.
//
// It must not decide permissions, talk to a model, or keep state between
// calls: Memory and Build are pure functions of the file system and their
// arguments, and safe for concurrent use.
package sysprompt
