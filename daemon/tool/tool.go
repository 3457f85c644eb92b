// Package tool defines what a tool is to tackle: the spec the model sees, the
// attributes the runtime acts on, and the handler that executes locally.
//
// It is the bottom of the daemon's import graph and imports only the standard
// library. It must not know about sessions, permissions, events or protobuf:
// a tool sees its session only through the Env interface below, and the
// pipeline in daemon/dispatch is the only caller of a tool's methods.
package tool

import (
	"context"
	"encoding/json"
	"time"
)

// Spec is what the model sees of a tool: nothing else.
type Spec struct {
	// Name is the model-facing name, part of the public API (Read, Grep, mcp__srv__tool).
	Name string
	// Aliases are older names that resolve to this tool (TaskOutput for BashOutput).
	Aliases []string
	// Description is written for a model: what the tool does, when to use it, its limits.
	Description string
	// InputSchema is a JSON Schema (draft 2020-12 unless it says otherwise) for the input object.
	InputSchema json.RawMessage
	// An MCP tool's own title, annotations and output schema as its server
	// sent them, and its description before it was shortened for the model
	// ("" when not shortened): what tackle mcp serve passes on.
	Title               string
	Annotations         json.RawMessage
	OutputSchema        json.RawMessage
	OriginalDescription string
}

// Origin values for Attributes.Origin. MCP tools use "mcp:" + server name.
const (
	OriginBuiltin = "builtin"
	OriginSkill   = "skill"
	// OriginMCPPrefix + server name is the origin of an MCP server's tools.
	OriginMCPPrefix = "mcp:"
)

// Attributes is what the runtime knows about one call of a tool. They may
// depend on the input (Bash running ls is read-only, rm is not).
type Attributes struct {
	ReadOnly        bool
	Destructive     bool
	ConcurrencySafe bool
	// Interactive tools need a person (AskUserQuestion); never auto-approved.
	Interactive bool
	// Deferred tools are listed by name only until loaded through ToolSearch.
	Deferred bool
	// Origin is OriginBuiltin, OriginSkill or "mcp:NAME".
	Origin string
	// MaxResultChars is the size over which the pipeline persists the output
	// to a file and gives the model a preview. Zero means the pipeline default.
	// The pipeline caps it at 50,000 characters unless ExactResultLimit is set.
	MaxResultChars int
	// ExactResultLimit lets MaxResultChars exceed the usual 50,000-character
	// cap (up to 500,000): MCP tools, whose limit is MAX_MCP_OUTPUT_TOKENS or
	// the server's _meta["anthropic/maxResultSizeChars"].
	ExactResultLimit bool
}

// Tool is implemented by every tool: built-in, MCP, Skill, ToolSearch.
// Implementations must be safe for concurrent use: the pipeline runs
// concurrency-safe calls of the same tool in parallel.
type Tool interface {
	Spec() Spec
	// Attributes reports the attributes of a call with this (schema-valid) input.
	Attributes(input json.RawMessage) Attributes
	// Validate runs the tool's own checks after the schema passed. The error
	// text goes to the model and must say what to do next.
	Validate(ctx context.Context, call *Call) error
	// CheckPermission reports what the call touches, so the permission stage
	// can match rules and decide. It does not ask anyone.
	CheckPermission(ctx context.Context, call *Call) (Access, error)
	// Run is the handler. A failure the model should see is a Result with
	// IsError; a returned error is also turned into an error result.
	Run(ctx context.Context, call *Call, progress Progress) (*Result, error)
}

// Call is one invocation of a tool, as the pipeline hands it over.
type Call struct {
	// ID is the model's tool_use id.
	ID string
	// Name is the name the model used (possibly an alias).
	Name string
	// Input is the schema-valid JSON input object.
	Input json.RawMessage
	// Env is the session as the tool may see it.
	Env Env
	// Memo is the tool's own: what it derived from Input (such as the
	// decoded input), kept for its later methods on the same call. The
	// pipeline never reads it; a tool must check it still belongs to Input
	// (the pipeline replaces Input when a hook or a person edits it).
	Memo any
	// Nested, if set, runs another tool call through the same pipeline
	// (validation, hooks, permission in the parent turn's mode — a person
	// may be asked) as part of this call: the Skill tool's !`cmd` lines.
	Nested NestedFunc
	// ReadGuard, if set, says which paths the session's Read deny rules
	// cover. The pipeline sets it (nil when no Read deny rule applies); a
	// tool that walks directories (Grep, Glob) skips what it denies and says
	// how many it skipped, since the permission stage saw only the root.
	ReadGuard ReadGuard
}

// ReadGuard reports what the session's Read deny rules cover, for tools
// that read more than the paths the permission stage saw. Implementations
// are safe for concurrent use.
type ReadGuard interface {
	// Denied reports whether a Read deny rule covers path (absolute,
	// clean): the path itself or a directory above it. A walk skips a
	// denied directory whole.
	Denied(path string) bool
	// DeniedFile reports whether the regular file with this device and
	// inode is a file a Read deny rule covers under another name (a hard
	// link). Call it only for files with more than one link.
	DeniedFile(dev, ino uint64) bool
}

// NestedFunc runs a tool call through the pipeline and returns its result:
// Content and IsError as the model would get them, Display the final status
// (completed, failed, invalid, denied, blocked, cancelled).
type NestedFunc func(ctx context.Context, name string, input json.RawMessage) (*Result, error)

// Env is the part of a session that a tool may see. Implementations are safe
// for concurrent use. Changes go through a Result's Modifier, never through Env.
type Env interface {
	SessionID() string
	// Cwd is the session's current working directory (absolute).
	Cwd() string
	// WorkingDirs is the cwd followed by the additional directories (absolute,
	// cleaned, symlinks resolved).
	WorkingDirs() []string
	// Environ is the environment of the client that created the session.
	Environ() []string
	// FileState returns what the session last recorded about a file it read or wrote.
	FileState(path string) (FileState, bool)
	// OutputDir is the directory for this session's large outputs (created on demand).
	OutputDir() string
}

// FileState is the read-state of one file in a session.
type FileState struct {
	Path    string    `json:"path"`
	ModTime time.Time `json:"mod_time"`
	Size    int64     `json:"size"`
	// Hash is the hex SHA-256 of the content when it was read or written.
	Hash string `json:"hash"`
	// Partial is true when the read covered only part of the file.
	Partial bool `json:"partial"`
}

// Mutator is what a context modifier may change in a session. The session
// implements it; the pipeline applies modifiers in call order.
type Mutator interface {
	RecordFile(FileState)
	SetCwd(dir string)
	SetTodos(todos json.RawMessage)
}

// Modifier is a change to session state made by a call, applied by the
// pipeline after the call (after the whole run, for a parallel run).
type Modifier func(Mutator)

// Progress receives progress while a handler runs (e.g. Bash output). It may
// drop events for slow readers; it must not block the handler for long.
type Progress func(text string)

// Content is one block of a result.
type Content struct {
	// Type is "text", "image", "audio", "resource" (an embedded resource:
	// Text or Data, with URI and MimeType) or "resource_link" (URI, Text is
	// the link's name and description).
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data,omitempty"`
	// URI is set for "resource" and "resource_link" blocks (MCP).
	URI string `json:"uri,omitempty"`
}

// Text returns a text content block.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Result is what a handler returns.
type Result struct {
	Content []Content
	IsError bool
	// Display is a short human rendering for clients (e.g. a unified diff for Edit).
	Display string
	// Structured is an MCP tool's structuredContent (a JSON value), kept as sent.
	Structured json.RawMessage
	// Warning, if set, is published to the session as a notice (e.g. an MCP
	// result above 10,000 tokens).
	Warning string
	// Modifier, if set, changes session state after the call.
	Modifier Modifier
}

// ErrorResult is a result with one text block and IsError set.
func ErrorResult(msg string) *Result {
	return &Result{Content: []Content{Text(msg)}, IsError: true}
}

// TextResult is a result with one text block.
func TextResult(s string) *Result {
	return &Result{Content: []Content{Text(s)}}
}

// AccessKind says what sort of effect a call has, for the permission stage.
type AccessKind string

const (
	AccessRead    AccessKind = "read"    // reads files
	AccessEdit    AccessKind = "edit"    // creates or changes files
	AccessExec    AccessKind = "exec"    // runs commands
	AccessNetwork AccessKind = "network" // reaches the network
	AccessOther   AccessKind = "other"
	// AccessExternal acts where tackle cannot see (an MCP server's tool):
	// never allowed by the read-only check, whatever the tool's hints say;
	// only a rule, a mode, a hook or a person allows it.
	AccessExternal AccessKind = "external"
)

// Access describes what one call touches: the tool's own permission check
// (CheckPermission) fills it in, and the permission package matches rules
// against it without knowing the tool.
type Access struct {
	Kind AccessKind
	// Paths are the absolute paths touched, symlinks resolved where they exist.
	Paths []string
	// InsideWorkingDirs is true when every path is inside the session's working directories.
	InsideWorkingDirs bool
	// Command is the command line for AccessExec, the URL or domain for AccessNetwork.
	Command string

	// Commands are the simple commands of a shell command line, each with
	// wrapper commands (timeout, nice, nohup, …) and leading VAR= assignments
	// stripped, in order; Bash(spec) rules match them. Every one must be
	// allowed for an allow rule to allow the call; any one matching a deny or
	// ask rule denies or asks.
	Commands []string
	// CommandsReadOnly parallels Commands: true where that command on its
	// own is a known read-only command whose paths all lie inside the
	// working directories (the tool's check passes it), so an allow rule
	// need not cover it (`ls && npm test` with `Bash(npm test *)`).
	CommandsReadOnly []bool
	// Reads are absolute paths (symlinks resolved) the call reads, for
	// Read(spec) rules: the file of Read, the root of Grep and Glob, the file
	// arguments of cat/head/grep… in Bash.
	Reads []string
	// Writes are absolute paths the call creates or changes, for Edit(spec)
	// rules: the file of Edit and Write, Bash redirection targets.
	Writes []string
	// Sandboxed, when set, says the command will run in the OS sandbox
	// with auto-allow, and what the sandbox lets it do: the permission
	// stage then allows it unless a deny or ask rule or a hook says
	// otherwise.
	Sandboxed string
	// Redirects are the Writes that are shell redirection targets (`> f`,
	// `>> f`, `&> f`, a here-string's target is not one). An allow rule for
	// the command never covers them: they are decided as Edit (allowed in
	// acceptEdits inside the working directories or by an Edit allow rule,
	// asked otherwise).
	Redirects []string
	// RecursiveReads are directories (absolute, symlinks resolved) whose
	// whole tree the call reads: `grep -r PAT DIR`, `rg`, `find DIR -exec
	// cat`, `ag`, …. The call asks when a Read deny rule may cover anything
	// below one of them (deny rules matching the directory itself deny).
	RecursiveReads []string
	// RepoReads are repository roots whose content a git command prints
	// without naming literal paths (`git show HEAD`, `git log -p`, `git
	// grep`, `git cat-file -p SHA`): the call asks when any Read deny rule
	// may cover something in the repository. A git command whose content
	// paths are literal lists them in Reads instead.
	RepoReads []string
	// Domain is the host a network call reaches, for WebFetch(domain:…) rules.
	Domain string
	// Specifier is what Tool(spec) rules of other tools match: a skill's
	// name for Skill(name), an agent type for Task(agent).
	Specifier string
	// AlwaysAsk, when set, says why this call must be asked even when an
	// allow rule or the mode would allow it (a protected path, `bash -c`,
	// `eval`, a command that does not parse or is over 10,000 characters).
	// Deny rules still deny; bypassPermissions still allows.
	AlwaysAsk string
	// Reason, if set, tells a person why the call needs approval when the
	// engine asks (instead of a reason derived from Kind and Paths).
	Reason string
}
