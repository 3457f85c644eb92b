package dispatch

import (
	"encoding/json"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// CheckInput validates input against t's input schema as the pipeline
// does (name is the name the call used) and returns the normalised input,
// or the model-facing error. It runs nothing; explain uses it.
func (d *Dispatcher) CheckInput(t tool.Tool, name string, input json.RawMessage) (json.RawMessage, string) {
	return d.checkInput(t, name, input)
}
