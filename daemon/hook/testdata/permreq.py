#!/usr/bin/env python3
"""A PermissionRequest hook: answers from the call's input {"perm": X}."""
import json
import sys

data = json.load(sys.stdin)
perm = (data.get("tool_input") or {}).get("perm", "")
if perm == "allow":
    d = {"behavior": "allow"}
    if data.get("permission_suggestions"):
        d["updatedInput"] = dict(data["tool_input"], suggested=data["permission_suggestions"][0]["rules"][0]["toolName"])
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": d}}))
elif perm == "deny":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "permreq says no"}}}))
elif perm == "exit2":
    sys.exit(2)
