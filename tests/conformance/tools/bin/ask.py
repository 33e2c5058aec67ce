#!/usr/bin/python3
"""The question fixtures of the conformance suite, by name (argv[1]): sampling, elicitation, defaults, enums.

A toolgate/1 tool that declares "asks" reads its arguments as the first line of stdin, writes its question as one
JSON line on stdout, and reads the answer as one JSON line on stdin: {"type":"answer","id":...,"answer"|"error":...}.
"""
import json
import sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

def answer(question):
    send(question)
    reply = json.loads(sys.stdin.readline())
    if "error" in reply:
        # No answer (the client cannot be asked, or the question was refused): the tool fails, saying why.
        sys.stderr.write("no answer: " + reply["error"]["message"] + "\n")
        sys.exit(1)
    return reply["answer"]

def text(value):
    send({"type": "content", "content": [{"type": "text", "text": value}]})

args = json.loads(sys.stdin.readline() or "{}")
mode = sys.argv[1]
if mode == "sampling":
    reply = answer({"type": "sample", "id": 1, "maxTokens": 100, "messages": [
        {"role": "user", "content": {"type": "text", "text": args["prompt"]}}]})
    text("LLM response: " + reply["content"].get("text", ""))
elif mode == "elicitation":
    reply = answer({"type": "elicit", "id": 1, "message": args["message"], "requestedSchema": {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"]}})
    text("User response: " + json.dumps(reply))
else:
    schema = {
        "defaults": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "enums": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}},
        },
    }[mode]
    reply = answer({"type": "elicit", "id": 1, "message": "Test client default value handling - please accept with defaults"
                    if mode == "defaults" else "Choose options", "requestedSchema": {
                        "type": "object", "properties": schema, "required": []}})
    text("Elicitation completed: action=%s, content=%s" % (reply["action"], json.dumps(reply.get("content", {}))))
