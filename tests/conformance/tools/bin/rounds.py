#!/usr/bin/python3
"""The input-required fixtures of the conformance suite's 2026-07-28 scenarios, by name (argv[1]). Each asks its
question(s) through toolgate/1 (one JSON line on stdout, the answer as one JSON line on stdin), with the ids the
suite expects as the keys of `inputRequests`; toolgate turns them into input-required rounds for a stateless
client, and into elicitation and sampling requests for a session.
"""
import json
import sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

def reply():
    line = json.loads(sys.stdin.readline())
    if "error" in line:
        sys.stderr.write("no answer: " + line["error"]["message"] + "\n")
        sys.exit(1)
    return line["answer"]

def form(qid, message, properties, required):
    return {"type": "elicit", "id": qid, "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required}}

def sample(qid, text, tokens):
    return {"type": "sample", "id": qid, "maxTokens": tokens,
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}]}

def text(value):
    send({"type": "content", "content": [{"type": "text", "text": value}]})

json.loads(sys.stdin.readline() or "{}")
mode = sys.argv[1]
if mode in ("elicitation", "tampered"):
    send(form("user_name", "What is your name?", {"name": {"type": "string"}}, ["name"]))
    answer = reply()
    text("Hello, " + str(answer.get("content", {}).get("name", "")) + "!")
elif mode == "request_state":
    send(form("confirm", "Please confirm", {"ok": {"type": "boolean"}}, ["ok"]))
    reply()
    text("state-ok: the request state came back and was checked")
elif mode in ("sampling", "capabilities"):
    send(sample("capital_question", "What is the capital of France?", 100))
    answer = reply()
    text("The model says: " + answer.get("content", {}).get("text", ""))
elif mode == "multiple":
    # The three questions at once, in one write (toolgate gathers what arrives together): one round carries them.
    sys.stdout.write("".join(json.dumps(question) + "\n" for question in (
        form("user_name", "What is your name?", {"name": {"type": "string"}}, ["name"]),
        sample("greeting", "Generate a greeting", 50),
        {"type": "roots", "id": "client_roots"},
    )))
    sys.stdout.flush()
    answers = [json.loads(sys.stdin.readline()) for _ in range(3)]
    text("Got " + ", ".join(str(a.get("id")) for a in answers))
elif mode == "roots":
    send({"type": "roots", "id": "client_roots"})
    roots = reply().get("roots", [])
    text("Your roots: " + ", ".join(str(root.get("uri")) for root in roots))
elif mode == "multi_round":
    send(form("step1", "Step 1: What is your name?", {"name": {"type": "string"}}, ["name"]))
    name = reply().get("content", {}).get("name", "")
    send(form("step2", "Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"]))
    color = reply().get("content", {}).get("color", "")
    text(name + " likes " + color)
else:
    sys.stderr.write("unknown mode " + mode + "\n")
    sys.exit(2)
