#!/bin/sh
# exit.sh CODE [STDERR]: prints STDERR to stderr and exits with CODE.
cat >/dev/null
[ -n "$2" ] && printf '%s\n' "$2" >&2
exit "$1"
