/**
 * store_secret on a real terminal (issue 15): the CLI runs under `script` (util-linux), which gives it a pty. The
 * model asks for API_TOKEN; the person types it; nothing typed is echoed, the model hears only {"stored": ...},
 * the retried tool gets the value, and the value reaches neither the endpoint nor the terminal. A second request
 * is refused with Esc.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SecretStore } from "../../src/state/secret_store.ts";
import { answer, callTools, startChatServer, toolMessages } from "./chat_server.ts";
import { cliArgv } from "./run_cli.ts";
import { hostEnv, REPO } from "../support.ts";
import { openTerminal } from "../terminal.ts";
const VALID = "valid-token-2026-xyz";
const PROMPT = "Enter to store, Esc to refuse): ";

Deno.test("store_secret on a pty: typed without echo, stored encrypted, given to the retried tool, never to the model", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_secret_pty_" }));
  const state = join(dir, "state");
  const config = join(dir, "config");
  const endpoint = startChatServer([
    callTools([{ id: "a1", name: "api", args: { mode: "check" } }]),
    callTools([{ id: "s1", name: "store_secret", args: { name: "API_TOKEN", reason: "the API said 401" } }]),
    callTools([{ id: "a2", name: "api", args: { mode: "check" } }]),
    callTools([{ id: "s2", name: "store_secret", args: { name: "API_TOKEN", reason: "once more \x1b[2J" } }]),
    answer("Done."),
  ]);
  const cli = cliArgv([
    "--prompt",
    "call the api",
    "--base-url",
    endpoint.baseUrl,
    "--model",
    "test-model",
    "--tools",
    join(REPO, "tests", "fixtures", "secrets", "tools.json"),
    "--sandbox",
    "off",
    "--cwd",
    dir,
  ]);
  const env = hostEnv({ XDG_STATE_HOME: state, XDG_CONFIG_HOME: config });
  // No keyring here: the key goes to the state folder's key file.
  env.PATH = env.PATH.split(":").filter((folder) => !exists(join(folder, "secret-tool"))).join(":");
  let asked = 0;
  const terminal = openTerminal(cli, {
    cwd: dir,
    env,
    killAfterMs: 60_000,
    respond: (shown) => {
      const prompts = shown.split(PROMPT).length - 1;
      if (prompts <= asked) return undefined;
      asked = prompts;
      // The first time the value and Enter (a carriage return: the terminal is raw); the second time Esc.
      return asked === 1 ? `${VALID}\r` : "\x1b";
    },
  });
  try {
    const status = await terminal.status;
    const output = terminal.raw();
    const text = terminal.output();
    if (Deno.env.get("SHOW_PTY")) console.log(text);
    assert.equal(asked, 2, `the question did not come twice:\n${text}`);
    assert.equal(status.code, 0, text);
    assert.ok(!output.includes(VALID), `the typed value was echoed:\n${text}`);
    assert.match(text, /the model asks you for the secret API_TOKEN, which api, always401 receive\./);
    assert.match(text, /The model's reason: "the API said 401"/);
    // The model's reason cannot drive the terminal: its escape shows as text.
    assert.ok(!output.includes("\x1b[2J"), "the model's escape sequence reached the terminal");

    const messages = toolMessages(endpoint.requests[4].body).map((m) => JSON.parse(m.content));
    assert.equal(messages[0].credential, "API_TOKEN", "the first check failed for want of the token");
    assert.deepEqual(messages[1], { ok: true, result: { stored: "API_TOKEN" }, tool: "store_secret" });
    assert.deepEqual(messages[2].result, { user: "octocat" }, "the retried call got the typed value");
    assert.equal(messages[3].kind, "user_denied", "Esc refuses");
    assert.ok(
      !JSON.stringify(endpoint.requests.map((r) => r.body)).includes(VALID),
      "the value reached the model",
    );
    const store = new SecretStore({ env: { XDG_STATE_HOME: state, XDG_CONFIG_HOME: config }, keyring: null });
    assert.deepEqual(await store.values(), { API_TOKEN: VALID });
  } finally {
    await terminal[Symbol.asyncDispose]();
    await endpoint.close();
    await Deno.remove(dir, { recursive: true });
  }
});

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
