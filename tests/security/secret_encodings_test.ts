// Secrets in encodings (issue 24, items 3 and 9): a careless tool prints its stored secret as base64, base64url
// (inside a longer stream too), hex in either case, URL-encoded, reversed, upper-cased, split in two strings,
// spaced out and all but its last character. None of it reaches the LLM endpoint, `--debug`, `--output jsonl`,
// a transcript, the envelope or an error message. And masking is for what is secret: a passthrough `TZ` shows
// as it is, while `MY_API_KEY` (its name) and `FOO` (named in TOOLGATE_REDACT) are masked.
import assert from "node:assert/strict";
import { join } from "node:path";
import { SECRET_REMOVED_WARNING } from "../../src/state/redact.ts";
import { SecretStore } from "../../src/state/secret_store.ts";
import { answer, callTools, toolMessages } from "../agent/chat_server.ts";
import { baseEnv, executorOf, scratch } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";
import { runAgent } from "./hostile.ts";
import { realTempDir } from "./helpers.ts";

const ENCODINGS = join(FIXTURES, "encodings", "tools.json");
/** 28 characters: its base64 ends in `==`. */
const SECRET = "sk-live_Zq9x7KpL2mN4vB8cX1wQ";

function base64(text: string): string {
  return btoa(text);
}

function hex(text: string): string {
  return [...new TextEncoder().encode(text)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Each form the fixture tool prints, as it prints it. */
const FORMS: Record<string, string> = {
  b64: base64(SECRET),
  b64url: base64(SECRET).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
  // Inside a longer stream, at the two other alignments: only the inner part is the secret's alone.
  b64at1: base64(`x${SECRET}!`).slice(2, -4),
  b64at2: base64(`xy${SECRET}`).slice(3, -2),
  hex: hex(SECRET),
  HEX: hex(SECRET).toUpperCase(),
  url: hex(SECRET).replace(/(..)/g, "%$1"),
  reversed: [...SECRET].reverse().join(""),
  upper: SECRET.toUpperCase(),
  head: SECRET.slice(0, 13),
  tail: SECRET.slice(13),
  spaced: [...SECRET].join(" "),
  cut: SECRET.slice(0, -1),
};

/** Every form of the secret `text` shows, and every run of 8 of its characters, in any case. */
function leaks(text: string): string[] {
  const found = Object.entries(FORMS).filter(([, form]) => text.includes(form)).map(([name]) => name);
  const lower = text.toLowerCase();
  for (let i = 0; i + 8 <= SECRET.length; i++) {
    const run = SECRET.slice(i, i + 8).toLowerCase();
    if (lower.includes(run)) found.push(run);
  }
  for (const name of ["b64", "b64at1", "b64at2", "hex"]) {
    const form = FORMS[name];
    for (let i = 0; i + 12 <= form.length; i++) if (text.includes(form.slice(i, i + 12))) found.push(name);
  }
  return [...new Set(found)];
}

Deno.test("a stored secret a tool prints encoded, reversed, re-cased, split, spaced or cut reaches no endpoint, --debug, jsonl, transcript or envelope", async () => {
  const config = await realTempDir("toolgate_encodings_config_");
  const saved = join(config, "run.json");
  await new SecretStore({ env: { XDG_CONFIG_HOME: config, XDG_STATE_HOME: config }, keyring: null }).set(
    "SPILL_TOKEN",
    SECRET,
  );
  const run = await runAgent(
    [
      callTools([
        { id: "j", name: "spill", args: { mode: "json" } },
        { id: "f", name: "spill", args: { mode: "fail" } },
      ]),
      answer("done"),
    ],
    ["--debug", "--output", "jsonl", "--save-messages", saved],
    { XDG_CONFIG_HOME: config, XDG_STATE_HOME: config },
    ENCODINGS,
  );
  try {
    assert.equal(run.code, 0, run.stderr);
    const [json, failed] = toolMessages(run.server.requests[1].body).map((m) => JSON.parse(m.content));
    assert.equal(json.ok, true, JSON.stringify(json));
    for (const [key, value] of Object.entries(json.result as Record<string, unknown>)) {
      assert.match(JSON.stringify(value), /\[REDACTED\]/, `${key} was not masked: ${JSON.stringify(value)}`);
    }
    assert.equal(failed.kind, "execution_error");
    assert.match(failed.message, /^login failed: /);
    const places: [string, string][] = [
      ["the endpoint requests", JSON.stringify(run.server.requests.map((r) => r.body))],
      ["the envelope", JSON.stringify(json)],
      ["the error message", JSON.stringify(failed)],
      ["--debug output", run.stderr],
      ["--output jsonl", run.stdout],
      ["the transcript", await Deno.readTextFile(saved)],
    ];
    assert.match(run.stderr, /debug: -> POST/);
    assert.match(run.stdout, /"type":"tool_result"/);
    for (const [where, text] of places) assert.deepEqual(leaks(text), [], `${where} shows the secret`);
  } finally {
    await run.cleanup();
    await Deno.remove(config, { recursive: true });
  }
});

Deno.test("a passthrough variable is masked when its name, the manifest or TOOLGATE_REDACT marks it secret: TZ is not", async () => {
  await using dir = await scratch();
  const command = [
    "/bin/sh",
    "-c",
    'printf \'{"timezone":"%s","lang":"%s","key":"%s","foo":"%s","bar":"%s"}\' "$TZ" "$LANG" "$MY_API_KEY" "$FOO" "$BAR"',
  ];
  const executor = executorOf({ command, envPassthrough: ["TZ", "LANG", "MY_API_KEY", "FOO", "BAR"] }, {
    cwd: dir.path,
    env: baseEnv({
      TZ: "Europe/Helsinki",
      LANG: "en_US.UTF-8",
      MY_API_KEY: "k-0123456789abcdef",
      FOO: "foo-value-0123",
      BAR: "bar-other-4567",
      TOOLGATE_REDACT: "FOO",
    }),
  });
  const envelope = await executor.call("t", "{}");
  assert.ok(envelope.ok, JSON.stringify(envelope));
  assert.deepEqual(envelope.result, {
    timezone: "Europe/Helsinki",
    lang: "en_US.UTF-8",
    key: "[REDACTED]",
    foo: "[REDACTED]",
    bar: "bar-other-4567",
  });
});

Deno.test("a secret that shares words with a warning or a tool's prose leaves both whole; its secret-like fragments are masked", async () => {
  await using dir = await scratch();
  // Shares `variable` and `secret v` with the warning toolgate adds, and with the tool's own sentence.
  const key = "my-secret-variable-Zq9x7KpL2mN4";
  const command = [
    "/bin/sh",
    "-c",
    'printf \'{"note":"the secret variable was read","key":"%s","cut":"%s"}\' "$MY_API_KEY" "${MY_API_KEY%?}"',
  ];
  const executor = executorOf({ command, envPassthrough: ["MY_API_KEY"] }, {
    cwd: dir.path,
    env: baseEnv({ MY_API_KEY: key }),
  });
  const envelope = await executor.call("t", "{}");
  assert.ok(envelope.ok, JSON.stringify(envelope));
  assert.deepEqual(envelope.warnings, [SECRET_REMOVED_WARNING]);
  assert.deepEqual(envelope.result, {
    note: "the secret variable was read",
    key: "[REDACTED]",
    cut: "my-secret-var[REDACTED]",
  });
});

Deno.test("toolgate's own notes on an envelope stay whole when a secret's value is words of them", async () => {
  await using dir = await scratch();
  // Each value is words of a note: the one on text output, the one on a removed value.
  const executor = executorOf({
    command: ["/bin/sh", "-c", 'printf "said: %s, %s" "$MY_API_KEY" "$MY_TOKEN"'],
    envPassthrough: ["MY_API_KEY", "MY_TOKEN"],
  }, { cwd: dir.path, env: baseEnv({ MY_API_KEY: "passed as text", MY_TOKEN: "removed from the result" }) });
  const envelope = await executor.call("t", "{}");
  assert.ok(envelope.ok, JSON.stringify(envelope));
  assert.deepEqual(envelope.result, { text: "said: [REDACTED], [REDACTED]" });
  assert.deepEqual(envelope.warnings, [
    "the tool's stdout was not JSON; it is passed as text",
    SECRET_REMOVED_WARNING,
  ]);
});
