// Attacks on stored and declared secrets (issue 15): a tool that prints the secret it was given by name gets it
// neither to the LLM endpoint, nor to the audit log, a transcript or --debug output; a model cannot have a
// secret collected without a person to type it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { SecretStore } from "../../src/state/secret_store.ts";
import { storeSecretOpenAI } from "../../src/run/store_secret.ts";
import { STUB_PARAMETERS } from "../../src/agent/lazy_tools.ts";
import { answer, callTools, type Script, toolMessages } from "../agent/chat_server.ts";
import { REPO } from "../support.ts";
import { confinedTest, realTempDir, scriptExecutor } from "./helpers.ts";
import { type AgentRun, allText, leaksOf, runAgent } from "./hostile.ts";

/** The fixture manifest of the secret tests: `api` prints API_TOKEN back, `always401` refuses any. */
const SECRETS_TOOLS: string = join(REPO, "tests", "fixtures", "secrets", "tools.json");

/** A token with a quote, a backslash and characters past ASCII: every JSON form of it must be caught. */
const TOKEN = 'tok-"Qx7\\Zp9-é€-2026';

interface Run extends AgentRun {
  /** The state folder the run used (its audit log is there). */
  readonly state: string;
}

/** `toolgate --prompt hi` over the secrets fixture, the store in its own config folder, no terminal. */
async function runWithStore(
  script: Script,
  stored: Record<string, string>,
  args: readonly string[] = [],
): Promise<Run> {
  const state = await realTempDir("toolgate_stored_state_");
  const config = await realTempDir("toolgate_stored_config_");
  const env = { XDG_STATE_HOME: state, XDG_CONFIG_HOME: config };
  const store = new SecretStore({ env, keyring: null });
  for (const [name, value] of Object.entries(stored)) await store.set(name, value);
  const run = await runAgent(script, args, env, SECRETS_TOOLS);
  return {
    ...run,
    state,
    cleanup: async () => {
      await run.cleanup();
      for (const path of [state, config]) await Deno.remove(path, { recursive: true });
    },
  };
}

Deno.test("a stored secret a tool prints reaches no endpoint request, audit line, transcript, --debug or --output jsonl", async () => {
  const scratch = await realTempDir("toolgate_stored_out_");
  const saved = join(scratch, "run.json");
  const run = await runWithStore(
    [callTools([{ id: "a1", name: "api", args: { mode: "show" } }]), answer("done")],
    { API_TOKEN: TOKEN },
    ["--debug", "--save-messages", saved, "--output", "jsonl"],
  );
  try {
    assert.equal(run.code, 0, run.stderr);
    const [result] = toolMessages(run.server.requests[1].body);
    const envelope = JSON.parse(result.content);
    assert.equal(envelope.ok, true, result.content);
    assert.equal(
      envelope.result.said,
      "the token is [REDACTED]",
      "the tool got the stored value, and it was masked",
    );
    // store_secret is on the first request already, beside the manifest's tools.
    const offered = run.server.requests[0].body.tools.map((t: { function: { name: string } }) =>
      t.function.name
    );
    assert.deepEqual(offered, ["api", "always401", "pair", "store_secret"]);
    const places: [string, string][] = [
      ["the endpoint requests", JSON.stringify(run.server.requests.map((r) => r.body))],
      ["the audit log", await allText(run.state)],
      ["the transcript", await Deno.readTextFile(saved)],
      ["--debug output", run.stderr],
      ["--output jsonl", run.stdout],
    ];
    assert.match(places[1][1], /"tool":"api"/, "the call was audited");
    assert.match(run.stdout, /"type":"tool_result"/, "the events were written");
    for (const [where, text] of places) {
      assert.deepEqual(leaksOf(text, TOKEN), [], `${where} shows the secret`);
    }
  } finally {
    await run.cleanup();
    await Deno.remove(scratch, { recursive: true });
  }
});

Deno.test("a missing secret: unavailable with credential and the way to renew it; without a terminal store_secret is user_denied", async () => {
  const run = await runWithStore([
    callTools([{ id: "a1", name: "api", args: { mode: "check" } }]),
    callTools([{ id: "s1", name: "store_secret", args: { name: "API_TOKEN", reason: "the API needs it" } }]),
    callTools([{ id: "s2", name: "store_secret", args: { name: "HOME_DIR_KEY", reason: "just curious" } }]),
    answer("cannot"),
  ], {});
  try {
    assert.equal(run.code, 0, run.stderr);
    const [missing] = toolMessages(run.server.requests[1].body).map((m) => JSON.parse(m.content));
    assert.equal(missing.kind, "unavailable");
    assert.equal(missing.credential, "API_TOKEN");
    assert.match(missing.warnings.join("\n"), /call store_secret with \{"name":"API_TOKEN"/);
    const denied = JSON.parse(toolMessages(run.server.requests[2].body).at(-1)!.content);
    assert.equal(denied.kind, "user_denied");
    assert.match(denied.message, /without a terminal/);
    // A name no tool declares is never asked for: a model cannot use store_secret to collect other secrets.
    const undeclared = JSON.parse(toolMessages(run.server.requests[3].body).at(-1)!.content);
    assert.equal(undeclared.kind, "invalid_args");
    assert.equal(undeclared.field, "name");
    assert.equal(undeclared.expected, "one of API_TOKEN, FIRST_KEY, SECOND_KEY");
    const audit = await allText(run.state);
    assert.match(audit, /"tool":"store_secret".*"outcome":"user_denied"/);
  } finally {
    await run.cleanup();
  }
});

confinedTest(
  "a confined tool receives its declared secret through bubblewrap's environment, and prints it masked",
  async () => {
    const dir = await realTempDir("toolgate_stored_confined_");
    try {
      const executor = await scriptExecutor(
        dir,
        { secrets: { API_TOKEN: "valid-token-2026-xyz" } },
        SECRETS_TOOLS,
      );
      const checked = await executor.call("api", '{"mode":"check"}');
      assert.deepEqual(checked.ok && checked.result, { user: "octocat" }, JSON.stringify(checked));
      const shown = JSON.stringify(await executor.call("api", '{"mode":"show"}'));
      assert.ok(!shown.includes("valid-token-2026-xyz"), shown);
      assert.match(shown, /the token is \[REDACTED\]/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("with --lazy-tools the manifest's tools go as stubs, store_secret whole from the first request", async () => {
  const run = await runWithStore([answer("nothing to do")], {}, ["--lazy-tools"]);
  try {
    assert.equal(run.code, 0, run.stderr);
    const tools = run.server.requests[0].body.tools as { function: { name: string; parameters?: unknown } }[];
    assert.deepEqual(tools.find((t) => t.function.name === "store_secret"), storeSecretOpenAI());
    const api = tools.find((t) => t.function.name === "api");
    assert.deepEqual(api?.function.parameters, STUB_PARAMETERS, "the manifest's tool is a stub");
  } finally {
    await run.cleanup();
  }
});
