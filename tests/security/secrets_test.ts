// Attacks on secrets (issue 11, "What was seen" 3): a secret holding a quote, a backslash, a newline, a tab or
// characters past ASCII (a PEM key, a JSON credential) is written in no transcript, no --debug output and no audit
// line, escaped or not; and a tool that prints a passthrough secret gets it neither to the LLM endpoint nor to an
// MCP client.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { SECRET_REMOVED_WARNING } from "../../src/state/redact.ts";
import { answer, callTools, toolMessages } from "../agent/chat_server.ts";

import { baseEnv } from "../mcp/helpers.ts";
import { realTempDir } from "./helpers.ts";
import { allText, JSON_SECRET, leaksOf, PEM_SECRET, runAgent, serveHostileArgs } from "./hostile.ts";
import { cliArgs, REPO } from "../support.ts";

/**
 * A passthrough value whose name says nothing: a secret because the user names it in TOOLGATE_REDACT (issue 24:
 * a passthrough variable is not a secret for being passed).
 */
const PASSED = 'hunter2-Zq9x7Kp "qu0t3d" \\ b4ck\nsl4sh\tt4b é€';
const PASSED_ENV = { LEAK_VALUE: PASSED, TOOLGATE_REDACT: "LEAK_VALUE" };

function assertNoLeak(text: string, secret: string, where: string): void {
  assert.deepEqual(leaksOf(text, secret), [], `${where} shows the secret`);
}

Deno.test("secrets with quotes, backslashes and newlines reach no transcript, --debug output or audit line", async () => {
  const store = await realTempDir("toolgate_transcript_");
  const saved = join(store, "run.json");
  // The model learned both secrets (they are in its arguments); the tool echoes them back.
  const run = await runAgent(
    [
      callTools([
        { id: "e1", name: "echo", args: { value: `pem=${PEM_SECRET}` } },
        { id: "e2", name: "echo", args: { value: JSON_SECRET } },
      ]),
      answer("done"),
    ],
    ["--debug", "--save-messages", saved],
    { DB_PASSWORD: PEM_SECRET, GCP_CREDENTIALS_SECRET: JSON_SECRET },
  );
  try {
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /debug: -> POST http:\/\/127\.0\.0\.1/);
    assert.match(run.stderr, /debug: <- \{/);
    const transcript = await Deno.readTextFile(saved);
    const messages = JSON.parse(transcript);
    assert.deepEqual(messages.map((m: { role: string }) => m.role), [
      "system",
      "user",
      "assistant",
      "tool",
      "tool",
      "assistant",
    ]);
    assert.match(messages[2].tool_calls[0].function.arguments, /\[REDACTED\]/);
    const audit = await allText(run.state);
    assert.match(audit, /"tool":"echo"/, "the calls were audited");
    for (const secret of [PEM_SECRET, JSON_SECRET]) {
      assertNoLeak(transcript, secret, "the transcript");
      assertNoLeak(run.stderr, secret, "--debug output");
      assertNoLeak(run.stdout, secret, "stdout");
      assertNoLeak(audit, secret, "the audit log");
    }
  } finally {
    await run.cleanup();
    await Deno.remove(store, { recursive: true });
  }
});

Deno.test("a tool that prints a passthrough secret does not get it to the LLM endpoint", async () => {
  const run = await runAgent(
    [
      callTools([
        { id: "j", name: "leak", args: { mode: "json" } },
        { id: "t", name: "leak", args: { mode: "text" } },
        { id: "f", name: "leak", args: { mode: "fail" } },
      ]),
      answer("done"),
    ],
    [],
    PASSED_ENV,
  );
  try {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.server.requests.length, 2);
    for (const request of run.server.requests) {
      assertNoLeak(JSON.stringify(request.body), PASSED, "a request");
    }
    const [json, text, failed] = toolMessages(run.server.requests[1].body).map((m) => JSON.parse(m.content));
    assert.equal(json.ok, true);
    assert.deepEqual(json.result, {
      value: "[REDACTED]",
      nested: { "[REDACTED]": ["before [REDACTED] after"] },
    });
    assert.deepEqual(json.warnings, [SECRET_REMOVED_WARNING]);
    assert.equal(text.result.text, "the value is [REDACTED], see\n");
    assert.deepEqual(text.warnings.slice(-1), [SECRET_REMOVED_WARNING]);
    assert.equal(failed.kind, "execution_error");
    assert.equal(failed.message, "cannot log in with [REDACTED]");
    assert.deepEqual(failed.warnings, [SECRET_REMOVED_WARNING]);
  } finally {
    await run.cleanup();
  }
});

Deno.test("a tool that prints a passthrough secret does not get it to an MCP client", async () => {
  const dir = await realTempDir("toolgate_hostile_mcp_");
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: cliArgs(["--allow-read", "--allow-write", "--allow-env", "--allow-run"], serveHostileArgs(dir)),
    cwd: REPO,
    env: { ...baseEnv(), ...PASSED_ENV },
    stderr: "pipe",
  });
  const client = new Client({ name: "toolgate-tests", version: "1.0.0" });
  await client.connect(transport);
  try {
    for (const mode of ["json", "text", "fail"]) {
      const result = await client.callTool({ name: "leak", arguments: { mode } });
      assertNoLeak(JSON.stringify(result), PASSED, `the ${mode} result`);
      // A success's warnings follow its JSON as text blocks; a failure's ride in its envelope.
      const content = result.content as { type: string; text: string }[];
      const warnings = result.isError
        ? (result.structuredContent as { warnings?: string[] }).warnings ?? []
        : content.slice(1).map((block) => block.text);
      const expected = result.isError ? SECRET_REMOVED_WARNING : `warning: ${SECRET_REMOVED_WARNING}`;
      assert.ok(warnings.includes(expected), JSON.stringify(result));
      assert.equal(result.isError, mode === "fail" ? true : undefined);
    }
    const json = await client.callTool({ name: "leak", arguments: { mode: "json" } });
    assert.deepEqual(json.structuredContent, {
      value: "[REDACTED]",
      nested: { "[REDACTED]": ["before [REDACTED] after"] },
    });
  } finally {
    await client.close();
    await Deno.remove(dir, { recursive: true });
  }
});
