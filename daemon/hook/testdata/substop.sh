#!/bin/sh
# substop.sh FILE [TAG]: a SubagentStop hook. Appends its input to FILE as one
# JSON line ({"tag":TAG,"input":…}); then lets the child end when
# stop_hook_active is true, exits 2 with a reason on stderr when the last
# message says "exit2please", and otherwise keeps the child going
# (decision block with a reason).
input=$(cat)
printf '{"tag":"%s","input":%s}\n' "$2" "$input" >> "$1"
case "$input" in
*'"stop_hook_active":true'*) exit 0 ;;
*exit2please*) echo "fix the lint first" >&2; exit 2 ;;
esac
echo '{"decision":"block","reason":"run the tests first"}'
