package web

import "github.com/tackle-agent/tackle/daemon/tool"

// CloseIdleConnections closes the idle connections of the tools' HTTP
// clients, so that tests end with no transport goroutines left.
func CloseIdleConnections(tools []tool.Tool) {
	for _, t := range tools {
		switch x := t.(type) {
		case *Fetch:
			x.client.CloseIdleConnections()
		case *Search:
			x.opts.HTTPClient.CloseIdleConnections()
		}
	}
}
