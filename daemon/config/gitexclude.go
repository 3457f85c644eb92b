package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeepOutOfGit keeps a file tackle writes into a project —
// .tackle/settings.local.json and the lock file beside it — out of git, as
// Claude Code keeps its local settings out: when path is such a file inside
// a git work tree, "/REL" and "/REL.lock" (REL: its path from the top of
// the work tree) are added to the repository's info/exclude, unless they
// are there already. It touches nothing for any other path or outside a
// repository, and never changes a .gitignore (that file is the project's).
// An error says why the exclusion could not be written; the caller's
// settings are written either way.
func KeepOutOfGit(path string) error {
	if filepath.Base(path) != "settings.local.json" || filepath.Base(filepath.Dir(path)) != ".tackle" {
		return nil
	}
	top, gitDir, err := findGitDir(filepath.Dir(filepath.Dir(path)))
	if err != nil || top == "" {
		return err
	}
	rel, err := filepath.Rel(top, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil
	}
	rel = "/" + filepath.ToSlash(rel)
	exclude := filepath.Join(gitDir, "info", "exclude")
	data, err := os.ReadFile(exclude)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", exclude, err)
	}
	have := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		have[strings.TrimSpace(sc.Text())] = true
	}
	var add strings.Builder
	for _, line := range []string{rel, rel + ".lock"} {
		if !have[line] {
			add.WriteString(line + "\n")
		}
	}
	if add.Len() == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(exclude), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(exclude), err)
	}
	f, err := os.OpenFile(exclude, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", exclude, err)
	}
	text := "# tackle's local settings (not shared)\n" + add.String()
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		text = "\n" + text
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", exclude, err)
	}
	return f.Close()
}

// findGitDir finds the git work tree holding dir: its top directory and
// the directory holding its info/exclude (.git, or for a linked worktree
// or submodule the common git directory its .git file leads to). top is ""
// when dir is in no work tree.
func findGitDir(dir string) (top, gitDir string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		dotGit := filepath.Join(d, ".git")
		fi, err := os.Lstat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			return d, dotGit, nil
		case err == nil && fi.Mode().IsRegular():
			gd, err := readGitFile(dotGit)
			if err != nil {
				return "", "", err
			}
			return d, commonDir(gd), nil
		}
		if filepath.Dir(d) == d {
			return "", "", nil
		}
	}
}

// readGitFile reads a .git file ("gitdir: PATH") and returns the git
// directory it names, absolute.
func readGitFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s does not name a git directory (no \"gitdir:\" line)", path)
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(path), gd)
	}
	return filepath.Clean(gd), nil
}

// commonDir is the common directory of git directory gd (its commondir
// file, for a linked worktree), else gd.
func commonDir(gd string) string {
	b, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return gd
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gd, c)
	}
	return filepath.Clean(c)
}
