#!/usr/bin/env bash
# Runs the Neovim plugin's headless tests (clients/nvim/test/*_spec.lua, or
# the ones named as arguments) against a private tackled: it builds tackled
# and tackle (and the fake model server when internal/testpeers/fakemodelcmd
# exists), starts the daemon on a socket in a temp dir with its own HOME and
# XDG dirs, runs each spec in its own `nvim --headless -u NONE -i NONE -n`
# and fails when one exits non-zero. TACKLE_TEST_BIN=DIR uses the tackled and
# tackle in DIR instead of building them; TACKLE_TEST_FAKEMODEL=PATH names the
# fake model server's binary.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvim >/dev/null || { echo "nvim-test: nvim is not installed (make deps installs it)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tackle-nvim.XXXXXX")
daemon=""
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

bin=${TACKLE_TEST_BIN:-}
if [ -z "$bin" ]; then
  bin=$tmp/bin
  CGO_ENABLED=0 go build -o "$bin/" ./daemon/cmd/tackled ./clients/cli/cmd/tackle
fi
fake=${TACKLE_TEST_FAKEMODEL:-}
if [ -z "$fake" ] && [ -d internal/testpeers/fakemodelcmd ]; then
  go build -o "$tmp/" ./internal/testpeers/fakemodelcmd
  fake=$tmp/fakemodelcmd
fi

export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state XDG_RUNTIME_DIR=$tmp/run NO_COLOR=1
unset TACKLE_SOCKET TACKLE_SESSION ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL OPENAI_BASE_URL OPENAI_API_KEY
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR" "$tmp/work"
sock=$tmp/run/tackled.sock
"$bin/tackled" --socket "$sock" --state-dir "$tmp/state/tackle" 2>"$tmp/tackled.log" &
daemon=$!
for _ in $(seq 100); do # until it answers (at most 10s)
  "$bin/tackle" --socket "$sock" --no-autostart status >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$tmp/tackled.log" >&2; exit 1; }
  sleep 0.1
done

specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(clients/nvim/test/*_spec.lua)
failed=()
for spec in "${specs[@]}"; do
  name=$(basename "$spec" .lua)
  echo "== $name"
  if ! TACKLE_TEST_BIN=$bin TACKLE_TEST_SOCKET=$sock TACKLE_TEST_DIR=$tmp/work/$name TACKLE_TEST_FAKEMODEL=$fake \
    timeout 120 nvim --headless -u NONE -i NONE -n -c "luafile $spec" </dev/null; then
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "nvim-test: FAILED: ${failed[*]} (the end of tackled's log follows)" >&2
  tail -n 40 "$tmp/tackled.log" >&2
  exit 1
fi
echo "nvim-test: all ${#specs[@]} specs passed"
[ -n "$fake" ] || echo "nvim-test: chat_spec was skipped: it needs the fake model server (internal/testpeers/fakemodelcmd)" >&2
