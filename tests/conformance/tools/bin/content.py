#!/usr/bin/python3
"""The content fixtures of the conformance suite, by name (argv[1]): image, audio, resource, mixed."""
import base64
import json
import struct
import sys
import zlib

# A 1x1 red PNG, built rather than pasted so that the bytes are plainly what they claim.
def png():
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    raw = b"\x00\xff\x00\x00"
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

# A WAV header with 8 silent 8-bit samples.
def wav():
    samples = b"\x80" * 8
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body

def b64(data):
    return base64.b64encode(data).decode("ascii")

def send(message):
    # One JSON object per line, flushed: toolgate reads the channel as the tool writes it.
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

json.load(sys.stdin)  # the arguments (none here)
image = {"type": "image", "data": b64(png()), "mimeType": "image/png"}
blocks = {
    "image": [image],
    "audio": [{"type": "audio", "data": b64(wav()), "mimeType": "audio/wav"}],
    "resource": [{"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain",
        "text": "This is an embedded resource content."}}],
    "mixed": [
        {"type": "text", "text": "Multiple content types test:"},
        image,
        {"type": "resource", "resource": {
            "uri": "test://mixed-content-resource", "mimeType": "application/json",
            "text": json.dumps({"test": "data", "value": 123})}},
    ],
}[sys.argv[1]]
send({"type": "content", "content": blocks})
