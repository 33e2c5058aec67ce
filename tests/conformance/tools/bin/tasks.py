#!/usr/bin/python3
"""The tasks-extension fixtures of the conformance suite's 2026-07-28 scenarios, by name (argv[1]): greet (quick:
never a task), slow_compute (sleeps `seconds`: a task past a moment), failing_job (fails after a second: a task
completed with isError), confirm_delete (works a second, then asks the user through toolgate/1: a task waiting for
input), multi_input (works a second, then asks the user two questions at once: a task waiting for two inputs,
answered one by one), test_tool_with_task (asks the user's name at once: a round before any task; then works a
second: a task whose result names them).
"""
import json
import sys
import time

args = json.loads(sys.stdin.readline() or "{}")
mode = sys.argv[1]

def text(value):
    sys.stdout.write(json.dumps({"type": "content", "content": [{"type": "text", "text": value}]}) + "\n")
    sys.stdout.flush()

if mode == "greet":
    text("Hello, " + str(args.get("name", "world")) + "!")
elif mode == "slow_compute":
    time.sleep(float(args.get("seconds", 1)))
    text("computed " + str(args.get("label", "")) + " after " + str(args.get("seconds", 1)) + "s")
elif mode == "failing_job":
    time.sleep(1)
    sys.stderr.write("the job failed, as it always does\n")
    sys.exit(1)
elif mode == "confirm_delete":
    # Some work first: past toolgate's moment, the call is a task, and its question the task's.
    time.sleep(1)
    sys.stdout.write(json.dumps({"type": "elicit", "id": "confirm", "message": "Delete the file?",
        "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}) + "\n")
    sys.stdout.flush()
    reply = json.loads(sys.stdin.readline())
    confirmed = "answer" in reply and reply["answer"].get("content", {}).get("confirm") is True
    text("deleted" if confirmed else "kept")
elif mode == "multi_input":
    # Some work first (a task by then), then two questions at once: both wait together, each answered on its own
    # (in any order, in one update or two).
    time.sleep(1)
    for qid, field in (("name", "name"), ("confirm", "confirm")):
        kind = "string" if field == "name" else "boolean"
        sys.stdout.write(json.dumps({"type": "elicit", "id": qid, "message": "Your " + field + "?",
            "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}}) + "\n")
    sys.stdout.flush()
    answers = [json.loads(sys.stdin.readline()), json.loads(sys.stdin.readline())]
    text("answered: " + ", ".join(sorted(str(answer.get("id")) for answer in answers)))
elif mode == "test_tool_with_task":
    # A question at once (a round, before any task), then work past toolgate's moment: a task from there.
    sys.stdout.write(json.dumps({"type": "elicit", "id": "user_name", "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}) + "\n")
    sys.stdout.flush()
    reply = json.loads(sys.stdin.readline())
    name = reply.get("answer", {}).get("content", {}).get("name", "nobody")
    time.sleep(1)
    text("Hello, " + str(name) + ": the long part is done")
else:
    sys.exit(2)
