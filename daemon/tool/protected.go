package tool

import (
	"path/filepath"
	"strings"
)

// protectedDirs are directory names whose contents configure git, tackle,
// Claude Code or an editor: a change there can run code later.
var protectedDirs = []string{".git", ".tackle", ".claude", ".vscode"}

// protectedFiles are file names that configure a shell, git or MCP servers.
var protectedFiles = []string{
	".mcp.json", ".bashrc", ".zshrc", ".profile", ".bash_profile", ".zprofile", ".gitconfig", ".gitmodules",
}

// ProtectedPath reports why a change to the path p must be asked even when
// an allow rule or the mode would allow it: it returns the protected name
// (".git", ".bashrc", …) that p contains, or "" when p is not protected. A
// path is protected when any component is one of .git, .tackle, .claude or
// .vscode, or its base name is .mcp.json, a shell rc file, .gitconfig or
// .gitmodules. Names compare case-insensitively (case-insensitive file
// systems).
func ProtectedPath(p string) string {
	p = filepath.Clean(p)
	base := filepath.Base(p)
	for _, f := range protectedFiles {
		if strings.EqualFold(base, f) {
			return f
		}
	}
	for _, part := range strings.Split(p, string(filepath.Separator)) {
		for _, d := range protectedDirs {
			if strings.EqualFold(part, d) {
				return d
			}
		}
	}
	return ""
}
