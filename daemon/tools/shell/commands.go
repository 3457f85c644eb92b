package shell

import (
	"path"
	"strings"
)

// readOnlyCommands maps a command name to the check of its arguments: true
// when the command, run with them, reads and prints but changes nothing.
// Redirections are checked separately.
var readOnlyCommands = map[string]func(args []arg) bool{}

func init() {
	always := func([]arg) bool { return true }
	for _, n := range []string{
		// files and text
		"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "cut", "tr", "nl", "tac", "rev",
		"fold", "expand", "unexpand", "column", "paste", "join", "comm", "cmp", "diff", "od", "hexdump",
		"strings", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum",
		"stat", "du", "df", "basename", "dirname", "realpath", "readlink", "jq",
		// the shell and the system
		"pwd", "echo", "printf", "which", "type", "whereis", "true", "false", ":", "test", "[",
		"printenv", "id", "whoami", "groups", "uname", "nproc", "arch", "uptime", "locale", "sleep",
		"cd", "exit", "set", "shift", "break", "continue", "return", "wait", "read",
	} {
		readOnlyCommands[n] = always
	}
	readOnlyCommands["find"] = findReadOnly
	readOnlyCommands["rg"] = noneOf("--pre")
	readOnlyCommands["sort"] = noneOf("-o", "--output", "--compress-program")
	readOnlyCommands["file"] = noneOf("-C", "--compile")
	readOnlyCommands["tree"] = noneOf("-o")
	readOnlyCommands["uniq"] = atMostPositional(1)
	readOnlyCommands["xxd"] = func(a []arg) bool { return atMostPositional(1)(a) && noneOf("-r", "-revert")(a) }
	readOnlyCommands["date"] = dateReadOnly
	readOnlyCommands["env"] = envReadOnly
	readOnlyCommands["hostname"] = func(a []arg) bool { return positional(a) == 0 }
	readOnlyCommands["command"] = func(a []arg) bool { return len(a) > 0 && allStatic(a) && (a[0].S == "-v" || a[0].S == "-V") }
	readOnlyCommands["git"] = gitReadOnly
}

func allStatic(args []arg) bool {
	for _, a := range args {
		if !a.Static {
			return false
		}
	}
	return true
}

// noneOf accepts static arguments none of which is one of the flags (also
// as --flag=value or, for a short flag, with its value attached).
func noneOf(flags ...string) func([]arg) bool {
	return func(args []arg) bool {
		if !allStatic(args) {
			return false
		}
		for _, a := range args {
			for _, f := range flags {
				if a.S == f || strings.HasPrefix(a.S, f+"=") || (len(f) == 2 && f[0] == '-' && strings.HasPrefix(a.S, f)) {
					return false
				}
			}
		}
		return true
	}
}

func positional(args []arg) int {
	n := 0
	for _, a := range args {
		if !strings.HasPrefix(a.S, "-") || a.S == "-" {
			n++
		}
	}
	return n
}

func atMostPositional(n int) func([]arg) bool {
	return func(args []arg) bool { return allStatic(args) && positional(args) <= n }
}

// findWriting are the find primaries that run commands, delete or write files.
var findWriting = map[string]bool{
	"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "-delete": true,
	"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true,
}

func findReadOnly(args []arg) bool {
	for _, a := range args {
		if !a.Static || findWriting[a.S] {
			return false
		}
	}
	return true
}

// dateReadOnly: date prints unless it sets the clock (-s, --set, or an
// operand that is not a +FORMAT).
func dateReadOnly(args []arg) bool {
	if !allStatic(args) {
		return false
	}
	for _, a := range args {
		switch {
		case a.S == "-s" || strings.HasPrefix(a.S, "--set") || (strings.HasPrefix(a.S, "-s") && !strings.HasPrefix(a.S, "--")):
			return false
		case !strings.HasPrefix(a.S, "-") && !strings.HasPrefix(a.S, "+"):
			return false
		}
	}
	return true
}

// envReadOnly: env prints the environment unless given a command to run.
func envReadOnly(args []arg) bool {
	if !allStatic(args) {
		return false
	}
	for _, a := range args {
		if !strings.HasPrefix(a.S, "-") && !strings.Contains(a.S, "=") {
			return false
		}
		if a.S == "-S" || strings.HasPrefix(a.S, "--split-string") || a.S == "-C" || strings.HasPrefix(a.S, "--chdir") {
			return false
		}
	}
	return true
}

// gitSubcommand skips git's global options and returns the subcommand and
// its arguments. ok is false when an option can run commands or change
// configuration (-c, --exec-path, ...) or the subcommand is not static.
func gitSubcommand(args []arg) (sub string, rest []arg, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Static {
			return "", nil, false
		}
		switch {
		case a.S == "-C":
			i++ // its directory
		case a.S == "--no-pager" || a.S == "-P" || a.S == "--no-replace-objects" || a.S == "--literal-pathspecs" ||
			a.S == "--no-optional-locks" || a.S == "--bare" || a.S == "--paginate" || a.S == "-p":
		case strings.HasPrefix(a.S, "--git-dir=") || strings.HasPrefix(a.S, "--work-tree=") || strings.HasPrefix(a.S, "--namespace="):
		case strings.HasPrefix(a.S, "-"):
			return "", nil, false // -c, --config-env, --exec-path, ...
		default:
			return a.S, args[i+1:], true
		}
	}
	return "", nil, false
}

// gitReadOnlySubcommands are the git subcommands that only read, with the
// check of their arguments.
var gitReadOnlySubcommands = map[string]func(args []arg) bool{}

func init() {
	plain := func(args []arg) bool {
		for _, a := range args {
			if !a.Static {
				return false
			}
			for _, f := range []string{"--output", "--ext-diff", "-O", "--open-files-in-pager", "--textconv"} {
				if a.S == f || strings.HasPrefix(a.S, f+"=") || (f == "-O" && strings.HasPrefix(a.S, "-O")) {
					return false
				}
			}
		}
		return true
	}
	for _, s := range []string{
		"status", "log", "show", "diff", "rev-parse", "ls-files", "ls-tree", "blame", "annotate", "grep",
		"describe", "shortlog", "rev-list", "cat-file", "diff-tree", "diff-files", "diff-index", "merge-base",
		"show-ref", "for-each-ref", "name-rev", "check-ignore", "check-attr", "count-objects", "var",
		"version", "whatchanged", "cherry", "show-branch", "verify-commit", "verify-tag",
	} {
		gitReadOnlySubcommands[s] = plain
	}
	gitReadOnlySubcommands["branch"] = gitListing(map[string]bool{
		"-a": true, "--all": true, "-r": true, "--remotes": true, "-v": true, "-vv": true, "--verbose": true,
		"--show-current": true, "-i": true, "--ignore-case": true, "--no-color": true, "--column": true,
		"--no-column": true, "--omit-empty": true,
	})
	gitReadOnlySubcommands["tag"] = gitListing(map[string]bool{
		"-i": true, "--ignore-case": true, "--no-color": true, "--column": true, "--no-column": true,
		"--omit-empty": true,
	})
	gitReadOnlySubcommands["remote"] = func(args []arg) bool {
		if !plain(args) {
			return false
		}
		ops := 0
		for _, a := range args {
			if a.S == "-v" || a.S == "--verbose" {
				continue
			}
			if ops == 0 && a.S != "get-url" && a.S != "show" {
				return false
			}
			ops++
		}
		return true
	}
	gitReadOnlySubcommands["config"] = func(args []arg) bool {
		if !plain(args) {
			return false
		}
		for _, a := range args {
			switch {
			case a.S == "get" || a.S == "list" || a.S == "--list" || a.S == "-l" || strings.HasPrefix(a.S, "--get"):
				return true
			case !strings.HasPrefix(a.S, "-"):
				return false
			}
		}
		return false
	}
	gitReadOnlySubcommands["stash"] = func(args []arg) bool {
		return plain(args) && len(args) > 0 && (args[0].S == "list" || args[0].S == "show")
	}
	gitReadOnlySubcommands["worktree"] = func(args []arg) bool {
		return plain(args) && len(args) > 0 && args[0].S == "list"
	}
	gitReadOnlySubcommands["reflog"] = func(args []arg) bool {
		if !plain(args) {
			return false
		}
		return len(args) == 0 || (args[0].S != "expire" && args[0].S != "delete" && args[0].S != "drop")
	}
}

// gitListing accepts the listing form of git branch and git tag: only the
// given flags, the filtering flags (whose values are patterns or commits),
// and name patterns only with --list.
func gitListing(flags map[string]bool) func([]arg) bool {
	valued := []string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "--color", "-n"}
	return func(args []arg) bool {
		list := false
		names := 0
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !a.Static {
				return false
			}
			switch {
			case a.S == "-l" || a.S == "--list":
				list = true
			case flags[a.S]:
			case !strings.HasPrefix(a.S, "-"):
				names++
			default:
				ok := false
				for _, v := range valued {
					if a.S == v {
						ok = true
						if v != "--color" && v != "-n" && i+1 < len(args) && !strings.HasPrefix(args[i+1].S, "-") {
							i++ // its value
						}
					} else if strings.HasPrefix(a.S, v+"=") || (v == "-n" && strings.HasPrefix(a.S, "-n")) {
						ok = true
					}
				}
				if !ok {
					return false
				}
			}
		}
		return names == 0 || list
	}
}

func gitReadOnly(args []arg) bool {
	sub, rest, ok := gitSubcommand(args)
	if !ok {
		return false
	}
	check, ok := gitReadOnlySubcommands[sub]
	return ok && check(rest)
}

// wrappers run their arguments as a command (after their own options).
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "nohup": true, "nice": true, "ionice": true, "timeout": true,
	"time": true, "exec": true, "command": true, "builtin": true, "stdbuf": true, "setsid": true,
	"xargs": true, "watch": true, "strace": true, "chroot": true, "unbuffer": true, "flock": true,
}

// mayDestroy are the commands destructiveCall looks at (besides wrappers and mkfs*).
var mayDestroy = map[string]bool{
	"rm": true, "rmdir": true, "shred": true, "dd": true, "wipefs": true, "fdisk": true, "sfdisk": true,
	"parted": true, "mkswap": true, "truncate": true, "unlink": true, "srm": true, "kill": true, "pkill": true,
	"killall": true, "shutdown": true, "reboot": true, "halt": true, "poweroff": true, "dropdb": true,
	"mv": true, "find": true, "crontab": true, "bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true,
	"eval": true, "docker": true, "podman": true, "kubectl": true, "terraform": true, "tofu": true, "git": true,
}

// destructiveCall reports whether a simple command (name first) deletes or
// overwrites data that cannot be recovered.
func destructiveCall(args []arg) bool {
	if len(args) == 0 || !args[0].Static {
		return false
	}
	name := path.Base(args[0].S)
	rest := args[1:]
	has := func(flags ...string) bool {
		for _, a := range rest {
			for _, f := range flags {
				if a.S == f || strings.HasPrefix(a.S, f+"=") {
					return true
				}
				// a short flag inside a cluster: -rf has -f
				if len(f) == 2 && f[0] == '-' && len(a.S) > 2 && a.S[0] == '-' && a.S[1] != '-' && strings.ContainsRune(a.S[1:], rune(f[1])) {
					return true
				}
			}
		}
		return false
	}
	first := func() string {
		for _, a := range rest {
			if !strings.HasPrefix(a.S, "-") {
				return a.S
			}
		}
		return ""
	}
	switch {
	case strings.HasPrefix(name, "mkfs"):
		return true
	case wrappers[name]:
		for i, a := range rest {
			if a.Static && !strings.HasPrefix(a.S, "-") && destructiveCall(rest[i:]) {
				return true
			}
		}
		return false
	}
	switch name {
	case "rm", "rmdir", "shred", "dd", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "truncate", "unlink",
		"srm", "kill", "pkill", "killall", "shutdown", "reboot", "halt", "poweroff", "dropdb":
		return true
	case "mv":
		return !has("-n", "--no-clobber", "-i", "--interactive", "--update=none")
	case "find":
		if has("-delete") {
			return true
		}
		for i, a := range rest {
			if (a.S == "-exec" || a.S == "-execdir" || a.S == "-ok" || a.S == "-okdir") && destructiveCall(rest[i+1:]) {
				return true
			}
		}
	case "crontab":
		return has("-r")
	case "bash", "sh", "zsh", "dash", "ksh":
		for i, a := range rest {
			if a.S == "-c" && i+1 < len(rest) && rest[i+1].Static {
				return classify(rest[i+1].S).Destructive
			}
		}
	case "eval":
		var parts []string
		for _, a := range rest {
			parts = append(parts, a.S)
		}
		return classify(strings.Join(parts, " ")).Destructive
	case "docker", "podman":
		for _, a := range rest {
			switch a.S {
			case "rm", "rmi", "prune", "kill":
				return true
			}
		}
	case "kubectl":
		return first() == "delete"
	case "terraform", "tofu":
		return first() == "destroy" || has("-destroy")
	case "git":
		sub, gargs, ok := gitSubcommand(rest)
		if !ok {
			return false
		}
		rest = gargs
		switch sub {
		case "push":
			if has("-f", "--force", "--force-with-lease", "--force-if-includes", "--delete", "-d", "--mirror", "--prune") {
				return true
			}
			for _, a := range rest {
				if strings.HasPrefix(a.S, "+") || (strings.HasPrefix(a.S, ":") && len(a.S) > 1) {
					return true
				}
			}
		case "reset":
			return has("--hard", "--merge", "--keep")
		case "clean":
			return has("-f", "--force")
		case "checkout":
			if has("-f", "--force", "--") {
				return true
			}
			for _, a := range rest {
				if a.S == "." {
					return true
				}
			}
		case "restore":
			staged, worktree := has("-S", "--staged"), has("-W", "--worktree")
			return worktree || !staged
		case "branch":
			return has("-D", "-d", "--delete", "-M", "-C", "--force", "-f")
		case "tag":
			return has("-d", "--delete", "-f", "--force")
		case "stash":
			s := first()
			return s == "drop" || s == "clear"
		case "reflog":
			s := first()
			return s == "expire" || s == "delete" || s == "drop"
		case "gc":
			return has("--prune")
		case "rm", "filter-branch", "filter-repo":
			return true
		case "update-ref":
			return has("-d")
		case "worktree":
			s := first()
			return s == "remove" || s == "prune"
		}
	}
	return false
}

// pathCommands take file or directory operands: every operand is a path
// (after skipping the first operand of the pattern-first ones below).
var pathCommands = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true, "egrep": true, "fgrep": true,
	"rg": true, "find": true, "stat": true, "du": true, "df": true, "file": true, "sort": true, "uniq": true,
	"cut": true, "nl": true, "tac": true, "rev": true, "fold": true, "expand": true, "unexpand": true,
	"column": true, "paste": true, "join": true, "comm": true, "cmp": true, "diff": true, "od": true,
	"hexdump": true, "xxd": true, "strings": true, "md5sum": true, "sha1sum": true, "sha224sum": true,
	"sha256sum": true, "sha384sum": true, "sha512sum": true, "b2sum": true, "cksum": true,
	"realpath": true, "readlink": true, "tree": true, "jq": true, "cd": true,
}

// patternFirst are the path commands whose first operand is a pattern or
// program, unless given with -e/-f (or --regexp/--file).
var patternFirst = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "rg": true, "jq": true}

// flagsWithValue are short options that take the next word as their value,
// per command (so that `head -n 5 x` has one operand).
var flagsWithValue = map[string]string{
	"head": "nc", "tail": "nc", "grep": "ABCdDefm", "egrep": "ABCdDefm", "fgrep": "ABCdDefm",
	"rg": "ABCEefgjmMrtT", "cut": "bcdf", "sort": "kt", "uniq": "fsw", "diff": "CUFIxX", "du": "dBt",
	"df": "tBx", "od": "AjNtw", "xxd": "cgloAsn", "tree": "LIPo", "jq": "", "nl": "bdfhilnsvw",
	"column": "cstoR", "paste": "d", "join": "12aeojt", "fold": "w", "expand": "t", "unexpand": "t",
	"hexdump": "eEfns", "strings": "ndtT", "ls": "IwT", "file": "efFmP", "stat": "c", "cmp": "in",
}

// collectPaths records the path-like operands of a read-only command.
func (c *classifier) collectPaths(name string, args []arg) {
	if name == "git" {
		c.gitPaths(args)
		return
	}
	if name == "cd" {
		var ops []arg
		for _, a := range args {
			if a.S == "--" || (a.Static && (a.S == "-L" || a.S == "-P" || a.S == "-e" || a.S == "-@")) {
				continue
			}
			ops = append(ops, a)
		}
		switch {
		case len(ops) == 0, ops[0].Static && ops[0].S == "-":
			c.refs = append(c.refs, pathRef{Cd: true, Unsure: true}) // $HOME or $OLDPWD
		default:
			c.refs = append(c.refs, pathRef{Path: ops[0].S, Cd: true, Unsure: !ops[0].Static || ops[0].Glob, Glob: ops[0].Glob})
		}
		return
	}
	if !pathCommands[name] {
		// Not a file command: only words that clearly are paths count.
		for _, a := range args {
			c.addPathLike(a)
		}
		return
	}
	valued := flagsWithValue[name]
	skipPattern := patternFirst[name]
	operands := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Static {
			c.refs = append(c.refs, pathRef{Unsure: true})
			continue
		}
		if !operands && a.S == "--" {
			operands = true
			continue
		}
		if !operands && strings.HasPrefix(a.S, "-") && a.S != "-" {
			if name == "find" {
				// find's expression: its values are names and patterns, not paths to read.
				operands = true
				break
			}
			if skipPattern && (a.S == "-e" || a.S == "-f" || a.S == "--regexp" || a.S == "--file" ||
				strings.HasPrefix(a.S, "--regexp=") || strings.HasPrefix(a.S, "-e")) {
				skipPattern = false
			}
			if len(a.S) == 2 && strings.IndexByte(valued, a.S[1]) >= 0 && i+1 < len(args) {
				if a.S == "-f" && patternFirst[name] {
					c.addPath(args[i+1], false) // the pattern file is read
				}
				i++
				continue
			}
			if k := strings.IndexByte(a.S, '='); k > 0 {
				c.addPathLike(arg{S: a.S[k+1:], Static: true})
			}
			continue
		}
		if skipPattern {
			skipPattern = false
			continue
		}
		c.addPath(a, false)
	}
}

// gitPaths records git's -C directory and the pathspecs after --, and any
// word that clearly is a path.
func (c *classifier) gitPaths(args []arg) {
	pathspecs := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case pathspecs:
			c.addPath(a, false)
		case a.S == "--":
			pathspecs = true
		case a.S == "-C" && i+1 < len(args):
			c.addPath(args[i+1], false)
			i++
		case strings.HasPrefix(a.S, "--git-dir=") || strings.HasPrefix(a.S, "--work-tree="):
			c.addPath(arg{S: a.S[strings.IndexByte(a.S, '=')+1:], Static: true}, false)
		default:
			c.addPathLike(a)
		}
	}
}

// addPath records a word that is a path.
func (c *classifier) addPath(a arg, cd bool) {
	if !a.Static {
		c.refs = append(c.refs, pathRef{Cd: cd, Unsure: true})
		return
	}
	if a.S == "-" || a.S == "/dev/null" || a.S == "/dev/stdin" {
		return
	}
	unsure := false
	if a.Glob {
		// A glob segment starting with a dot may match "..".
		for _, seg := range strings.Split(a.S, "/") {
			if strings.HasPrefix(seg, ".") && strings.ContainsAny(seg, "*?[{") {
				unsure = true
			}
		}
	}
	c.refs = append(c.refs, pathRef{Path: a.S, Cd: cd, Unsure: unsure, Glob: a.Glob})
}

// addPathLike records a word of a command that takes no file operands if it
// clearly is a path: absolute, ~, or with a .. component.
func (c *classifier) addPathLike(a arg) {
	if !a.Static {
		return // an expansion given to echo or printf names no file
	}
	s := a.S
	if k := strings.IndexByte(s, '='); k > 0 && strings.HasPrefix(s, "-") {
		s = s[k+1:]
	}
	if strings.HasPrefix(s, "/") || s == ".." || strings.HasPrefix(s, "../") || strings.Contains(s, "/../") || strings.HasSuffix(s, "/..") {
		c.addPath(arg{S: s, Static: true, Glob: a.Glob}, false)
	}
}
