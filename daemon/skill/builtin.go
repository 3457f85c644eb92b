package skill

import (
	"embed"
	"io/fs"
)

//go:embed builtin
var builtinFS embed.FS

// Builtin returns the built-in skills embedded in tackle, as
// <name>/SKILL.md files.
func Builtin() fs.FS {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		panic(err) // the directory is embedded: cannot happen
	}
	return sub
}
