package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// PrintJSON writes v as indented JSON and a newline.
func (a *App) PrintJSON(v any) error { return a.writeJSON(v, "  ") }

// PrintJSONLine writes v as one line of JSON.
func (a *App) PrintJSONLine(v any) error { return a.writeJSON(v, "") }

// writeJSON writes v and a newline in one write, without HTML escaping
// (tool output is full of < and >).
func (a *App) writeJSON(v any, indent string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err := a.Stdout.Write(b.Bytes())
	return err
}

// IsTerminal reports whether v is an *os.File open on a terminal.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Colour reports whether output to w may be coloured: w is a terminal,
// NO_COLOR is unset and TERM is not "dumb".
func (a *App) Colour(w io.Writer) bool {
	return IsTerminal(w) && a.Getenv("NO_COLOR") == "" && a.Getenv("TERM") != "dumb"
}
