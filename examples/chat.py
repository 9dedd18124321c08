#!/usr/bin/env python3
"""The standard flow of docs/socket-protocol.md in Python: create a session over REST, subscribe
over Socket.IO, send a message, print the answer as it streams, exit when the chat ends.
Needs python-socketio 5 and requests (Debian: python3-socketio python3-requests).
Usage: AGENTSVC_URL=http://127.0.0.1:8080 AGENTSVC_KEY=sk-... python3 examples/chat.py "hello"
"""
import os
import sys
import threading

import requests
import socketio

url = os.environ.get("AGENTSVC_URL", "http://127.0.0.1:8080")
key = os.environ.get("AGENTSVC_KEY")
message = sys.argv[1] if len(sys.argv) > 1 else "Hello!"
if not key:
    sys.exit("set AGENTSVC_KEY to an API key (agentsvc keys create --name example)")

# 1. A session (REST).
r = requests.post(f"{url}/api/sessions", json={"intent": "example"}, headers={"Authorization": f"Bearer {key}"}, timeout=30)
r.raise_for_status()
session_id = r.json()["session_id"]
print(f"session {session_id}", file=sys.stderr)

# 2. The socket, with the same key.
sio = socketio.Client()
ended = threading.Event()
result = {}
sub_agent_turns = set()


@sio.on("turn:start")
def on_turn_start(e):
    if e.get("parent_fork_tool_call_id"):
        sub_agent_turns.add(e["turn_id"])


@sio.on("turn:patch")
def on_patch(e):
    if e["turn_id"] in sub_agent_turns:
        return
    if e["patch_type"] == "add_content":
        sys.stdout.write(e["data"]["text_delta"])
        sys.stdout.flush()
    elif e["patch_type"] == "add_tool_call":
        print(f"\n[tool {e['data']['tool_name']}]", file=sys.stderr)


@sio.on("system:error")
def on_error(e):
    print(f"\nerror {e['code']}: {e['message']}", file=sys.stderr)


@sio.on("chat:end")
def on_end(e):
    result.update(e)
    ended.set()


def ack(event, payload):
    a = sio.call(event, payload, timeout=30)
    if not a.get("ok"):
        raise RuntimeError(f"{event}: {a['error']['code']} {a['error']['message']}")
    return a


sio.connect(url, auth={"token": key}, transports=["websocket", "polling"], wait_timeout=10)
# 3. Subscribe, send, wait for chat:end.
ack("session:subscribe", {"session_id": session_id})
sent = ack("chat:send", {"session_id": session_id, "message": message})
print(f"sent as {sent['turn_id']}", file=sys.stderr)
if not ended.wait(120):
    sys.exit("no chat:end within 120 s")
print()
print(f"chat:end {result['status']} ({result['finish_reason']}), last seq {result['seq']}", file=sys.stderr)
sio.disconnect()
sys.exit(0 if result["status"] == "completed" else 1)
