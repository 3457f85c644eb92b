package tool

import "context"

// Renderer is the optional method of a tool that shows people what a call
// would do before it runs: the text a permission prompt puts in front of
// the person asked (PermissionRequest.preview). Render must not change
// anything: an edit's diff is computed from the file as it is, a command
// is shown, not run. An error says why the call cannot be shown (the
// pipeline then shows its input).
type Renderer interface {
	Render(ctx context.Context, call *Call) (string, error)
}
