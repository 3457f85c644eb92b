#!/usr/bin/env python3
"""A PreToolUse hook: the call's input {"do": X} says what to answer."""
import json
import sys
import time

data = json.load(sys.stdin)
do = (data.get("tool_input") or {}).get("do", "")


def out(obj):
    print(json.dumps(obj))


def hso(**kw):
    kw["hookEventName"] = data["hook_event_name"]
    return {"hookSpecificOutput": kw}


if do in ("allow", "deny", "ask", "defer"):
    out(hso(permissionDecision=do, permissionDecisionReason="guard says " + do))
elif do == "bogus":
    out(hso(permissionDecision="maybe"))
elif do == "rewrite":
    out(hso(permissionDecision="allow", updatedInput={"do": "rewritten", "by": "guard"}))
elif do == "context":
    out(hso(additionalContext="remember the tests"))
elif do == "big":
    out(hso(additionalContext="x" * 20000))
elif do == "system":
    out({"systemMessage": "careful now"})
elif do == "stop":
    out({"continue": False, "stopReason": "stopped by guard"})
elif do == "legacy":
    out({"decision": "block", "reason": "old style"})
elif do == "badjson":
    print("{this is not json")
elif do == "plain":
    print("just some text")
elif do == "exit2":
    print(json.dumps(hso(permissionDecision="allow")))  # ignored with exit 2
    print("blocked by guard", file=sys.stderr)
    sys.exit(2)
elif do == "exit1":
    print("guard broke\nsecond line", file=sys.stderr)
    sys.exit(1)
elif do == "exit1json":
    out(hso(permissionDecision="deny", permissionDecisionReason="json wins"))
    sys.exit(3)
elif do == "hang":
    time.sleep(1000)
