#!/usr/bin/env bash
# Installs what tackle's tests need on a fresh Debian machine: ripgrep and fd-find
# (oracles for Grep and Glob), bubblewrap, and neovim (the plugin's tests). Does
# nothing when they are already there.
set -euo pipefail
need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v bwrap >/dev/null || need+=(bubblewrap) # the Bash sandbox (and its tests)
command -v fdfind >/dev/null || command -v fd >/dev/null || need+=(fd-find)
command -v nvim >/dev/null || need+=(neovim) # the Neovim plugin's headless tests (scripts/nvim-test.sh)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
bash "$(dirname "$0")/npm-peers.sh"
