#!/bin/sh
# Appends the event to formatter-edits.log in the project: the hook's
# input, then where the plugin and its data live.
log="$CLAUDE_PROJECT_DIR/formatter-edits.log"
cat >> "$log"
printf '\nroot=%s\ndata=%s\n' "$CLAUDE_PLUGIN_ROOT" "$CLAUDE_PLUGIN_DATA" >> "$log"
