#!/usr/bin/env bash
# Installs the npm packages tackle's tests run against (real MCP servers, the MCP
# conformance suite and a Node 22 for it) into testpeers/node_modules, exactly as
# testpeers/package-lock.json pins them. Does nothing when they are already there.
set -euo pipefail
cd "$(dirname "$0")/../testpeers"
stamp=node_modules/.tackle-installed
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is required to install the MCP test servers (apt-get install nodejs npm)" >&2; exit 1; }
echo "installing the MCP test peers (testpeers/package-lock.json)"
npm ci --no-audit --no-fund --loglevel=error
touch "$stamp"
