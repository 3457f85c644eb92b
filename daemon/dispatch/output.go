package dispatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/tool"
)

const (
	// hardMaxResultChars caps every tool's own limit (reference.md section 2).
	hardMaxResultChars = 50000
	// ceilingResultChars caps a tool's ExactResultLimit (MCP tools).
	ceilingResultChars = 500000
	// previewBytes is the size of the preview the model gets of a persisted output.
	previewBytes = 2000
)

// resultLimit is min(the tool's MaxResultChars or the pipeline default,
// 50000), or the tool's exact limit up to 500000 (MCP tools).
func (d *Dispatcher) resultLimit(a tool.Attributes) int {
	n := a.MaxResultChars
	if a.ExactResultLimit && n > 0 {
		return min(n, ceilingResultChars)
	}
	if n <= 0 {
		n = d.opts.MaxResultChars
	}
	return min(n, hardMaxResultChars)
}

// shapeOutput replaces an empty result with "(<Tool> completed with no
// output)" and a text result over limit characters with a persisted-output
// block: the full text is written to env.OutputDir()/<callID>.txt and the
// model gets its size, the path and a 2 KB preview. Image blocks stay.
func (d *Dispatcher) shapeOutput(env tool.Env, callID, name string, limit int, content []tool.Content) []tool.Content {
	var texts []string
	total := 0
	for _, c := range content {
		if c.Type == "text" || c.Type == "" {
			texts = append(texts, c.Text)
			total += len(c.Text)
		}
	}
	if len(texts) == len(content) && strings.TrimSpace(strings.Join(texts, "")) == "" {
		return []tool.Content{tool.Text(fmt.Sprintf("(%s completed with no output)", name))}
	}
	if total <= limit { // bytes ≥ chars: no need to count runes
		return content
	}
	full := strings.Join(texts, "\n")
	if utf8.RuneCountInString(full) <= limit {
		return content
	}
	path, err := persist(env.OutputDir(), callID, full)
	var block string
	if err != nil {
		d.log.Error("persisting large tool output", "call", callID, "error", err)
		block = fmt.Sprintf("<persisted-output>\nOutput too large (%s), and saving it failed (%v): only a preview is available.\n\nPreview (first 2KB):\n%s\n...\n</persisted-output>",
			sizeKB(len(full)), err, preview(full))
	} else {
		block = fmt.Sprintf("<persisted-output>\nOutput too large (%s). Full output saved to: %s\n\nPreview (first 2KB):\n%s\n...\n</persisted-output>",
			sizeKB(len(full)), path, preview(full))
	}
	out := []tool.Content{tool.Text(block)}
	for _, c := range content {
		if c.Type != "text" && c.Type != "" {
			out = append(out, c)
		}
	}
	return out
}

func persist(dir, callID, text string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("the session has no output directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating output directory %q: %w", dir, err)
	}
	path := filepath.Join(dir, safeFileName(callID)+".txt")
	tmp, err := os.CreateTemp(dir, ".out-*")
	if err != nil {
		return "", fmt.Errorf("writing output file in %q: %w", dir, err)
	}
	_, werr := tmp.WriteString(text)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing output file %q: %w", path, werr)
	}
	return path, nil
}

// safeFileName keeps a model-chosen call id from escaping the output directory.
func safeFileName(id string) string {
	var sb strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
		if sb.Len() >= 128 {
			break
		}
	}
	if sb.Len() == 0 {
		return "output"
	}
	return sb.String()
}

func sizeKB(n int) string {
	return fmt.Sprintf("%d KB", max(1, (n+512)/1024))
}

// preview is the first 2,000 bytes, cut at a line end when one is in the
// second half, else at a rune boundary.
func preview(s string) string {
	if len(s) <= previewBytes {
		return s
	}
	cut := previewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	p := s[:cut]
	if i := strings.LastIndexByte(p, '\n'); i > previewBytes/2 {
		p = p[:i]
	}
	return p
}
