#!/bin/sh
# record.sh FILE: appends its stdin and its project-dir variables to FILE as one JSON line.
input=$(cat)
printf '{"input":%s,"tackle_dir":"%s","claude_dir":"%s","pwd":"%s"}\n' "$input" "$TACKLE_PROJECT_DIR" "$CLAUDE_PROJECT_DIR" "$(pwd)" >> "$1"
