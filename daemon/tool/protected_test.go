package tool_test

import (
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestProtectedPath(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/p/.git/config", ".git"},
		{"/p/.git", ".git"},
		{"/p/sub/.git/hooks/pre-commit", ".git"},
		{"/p/.tackle/settings.local.json", ".tackle"},
		{"/p/.claude/settings.json", ".claude"},
		{"/p/.vscode/tasks.json", ".vscode"},
		{"/p/.mcp.json", ".mcp.json"},
		{"/home/u/.bashrc", ".bashrc"},
		{"/home/u/.zshrc", ".zshrc"},
		{"/home/u/.profile", ".profile"},
		{"/home/u/.bash_profile", ".bash_profile"},
		{"/home/u/.zprofile", ".zprofile"},
		{"/home/u/.gitconfig", ".gitconfig"},
		{"/p/.gitmodules", ".gitmodules"},
		{"/p/.GIT/config", ".git"},
		{"/p/x/../.git/config", ".git"},
		{"/p/src/main.go", ""},
		{"/p/.gitignore", ""},
		{"/p/.github/workflows/ci.yml", ""},
		{"/p/git/config", ""},
		{"/p/my.git/x", ""},
		{"/p/.bashrc.d/x", ""},
		{"/p/.mcp.json.bak", ""},
	} {
		if got := tool.ProtectedPath(tc.path); got != tc.want {
			t.Errorf("ProtectedPath(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
