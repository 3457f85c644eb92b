#!/bin/sh
# hang.sh PIDFILE: records its pid (its process group) and hangs with a child.
echo $$ > "$1.tmp" && mv "$1.tmp" "$1"
sleep 1000 &
sleep 1000
