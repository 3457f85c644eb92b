package config

import (
	"errors"
	"path/filepath"

	"github.com/tackle-agent/tackle/internal/safefile"
)

// readConfigFile reads a settings, MCP or trust file through the one safe
// reader: a regular file (a symlink to one is followed) of at most
// safefile.LimitSettings (safefile.LimitClaudeJSON for ~/.claude.json,
// which Claude Code fills with history). A device, a FIFO, a directory or
// a larger file is an error naming the path and the reason, and never
// blocks or grows the daemon.
func readConfigFile(path string) ([]byte, error) {
	limit := int64(safefile.LimitSettings)
	if filepath.Base(path) == ClaudeUserFile {
		limit = safefile.LimitClaudeJSON
	}
	return safefile.Read(path, limit)
}

// readReason is why readConfigFile failed, without the path (a Problem
// names it already).
func readReason(err error) string {
	var se *safefile.Error
	if errors.As(err, &se) {
		return se.Reason
	}
	return err.Error()
}
