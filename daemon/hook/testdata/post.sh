#!/bin/sh
# A PostToolUse hook: the result text says what to answer.
input=$(cat)
case "$input" in
*flagme*) echo '{"decision":"block","reason":"flagged by post.sh"}' ;;
*replaceme*) echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":"replaced by post.sh"}}' ;;
*ctxme*) echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"context from post.sh"}}' ;;
*exit2me*) echo "post.sh saw a problem" >&2; exit 2 ;;
esac
exit 0
