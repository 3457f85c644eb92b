// Package modeloracle checks tackle's own model clients (daemon/model)
// against the official SDKs, anthropic-sdk-go v2 and openai-go v3, used as
// test oracles: both clients parse the same streams of the fake model server
// (internal/fakemodel), and recorded real streams replayed through it, and
// what each builds is compared field by field.
//
// It is a module of its own (internal/modeloracle/go.mod) so that the SDKs
// and their dependencies never enter tackle's module graph, and so never the
// daemon binary: `go test ./...` at the repository root skips this
// directory. Run its tests with `cd internal/modeloracle && go test ./...`.
//
// It holds tests only; this file exists for the package's doc comment.
package modeloracle
