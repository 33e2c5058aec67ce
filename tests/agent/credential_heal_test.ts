/**
 * Credential auto-heal in the agent loop (issue 15), with real tool processes and a scripted endpoint: a credential
 * failure tells the model which secret to renew; the person is asked at most twice per failing tool in a turn,
 * then store_secret answers user_denied without asking; and the rule that tells a credential failure.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ChatClient } from "../../src/agent/chat_client.ts";
import { CredentialHeal, credentialOf, MAX_SECRET_ROUNDS } from "../../src/agent/credential_heal.ts";
import { runLoop } from "../../src/agent/loop.ts";
import type { ChatMessage } from "../../src/agent/messages.ts";
import { failure, success } from "../../src/contract.ts";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { Policy } from "../../src/policy/policy.ts";
import type { SecretRequest } from "../../src/run/store_secret.ts";
import { answer, callTools, startChatServer, toolMessages } from "./chat_server.ts";
import { REPO } from "../support.ts";

const loaded = await loadManifest(join(REPO, "tests", "fixtures", "secrets", "tools.json"));
if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
const manifest = loaded.manifest;
const ENV = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/tmp" };

Deno.test("auto-heal: a tool that keeps failing with 401 gets two store_secret rounds in a turn, then user_denied", async () => {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_heal_" });
  // A revoked token in the environment: the tool starts, and the API refuses it.
  const env = { ...ENV, API_TOKEN: "revoked-token-0" };
  const executor = new Executor({ manifest, env, cwd: dir, auditDir: null, sandbox: "off" });
  const storeSecret = (id: string) =>
    callTools([{ id, name: "store_secret", args: { name: "API_TOKEN", reason: "401 again" } }]);
  const tryApi = (id: string) => callTools([{ id, name: "always401", args: {} }]);
  await using server = startChatServer([
    tryApi("t1"),
    storeSecret("s1"),
    tryApi("t2"),
    storeSecret("s2"),
    tryApi("t3"),
    storeSecret("s3"),
    answer("The token is refused."),
  ]);
  // The person: answers every question with a new value, and counts them.
  const asked: SecretRequest[] = [];
  const persisted: string[] = [];
  const messages: ChatMessage[] = [{ role: "system", content: "S" }, { role: "user", content: "go" }];
  try {
    const outcome = await runLoop(messages, {
      executor,
      client: new ChatClient({ baseUrl: server.baseUrl, timeoutMs: 10_000, retries: 0 }),
      policy: new Policy({ yes: true }),
      model: "test-model",
      maxSteps: 10,
      secrets: {
        ask: (request) => {
          asked.push(request);
          return Promise.resolve(`renewed-token-${asked.length}`);
        },
        nobodyToAsk: "no terminal",
        heal: new CredentialHeal(),
        persist: (name) => {
          persisted.push(name);
          return Promise.resolve();
        },
      },
    });
    assert.equal(outcome.kind, "answer");
    assert.equal(asked.length, MAX_SECRET_ROUNDS, "the person was asked exactly twice");
    assert.deepEqual(persisted, ["API_TOKEN", "API_TOKEN"]);
    const answers = toolMessages(server.requests[6].body).map((m) => JSON.parse(m.content));
    const [t1, s1, t2, s2, t3, s3] = answers;
    for (const failed of [t1, t2, t3]) {
      assert.match(failed.message, /HTTP 401 Unauthorized/);
      assert.equal(failed.kind, "execution_error");
      assert.equal(failed.credential, "API_TOKEN", "a 401 of a tool with one secret names it");
    }
    for (const failed of [t1, t2]) {
      assert.equal(failed.retryable, true);
      assert.match(failed.warnings.join("\n"), /call store_secret with \{"name":"API_TOKEN"/);
    }
    assert.deepEqual(s1.result, { stored: "API_TOKEN" });
    assert.deepEqual(s2.result, { stored: "API_TOKEN" });
    // The rounds are spent: the third failure says to stop, and the third store_secret asks nobody.
    assert.equal(t3.credential, "API_TOKEN");
    assert.equal(t3.retryable, false);
    assert.match(t3.warnings.join("\n"), /do not call store_secret again/);
    assert.equal(s3.kind, "user_denied");
    assert.equal(s3.credential, "API_TOKEN");
    assert.match(s3.message, /already asked the user for API_TOKEN 2 times in this turn for always401/);
    // No renewed value reached the model.
    const sent = JSON.stringify(server.requests.map((r) => r.body));
    assert.ok(!sent.includes("renewed-token") && !sent.includes("revoked-token"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("auto-heal: a credential failure is its credential field, or the signs of a refused key for a tool with one secret", () => {
  const [api, , pair] = manifest.tools;
  const noSecrets = { ...api, secrets: [] };
  const failed = (message: string, credential?: string) =>
    failure("execution_error", message, { tool: "api", credential });
  for (
    const message of [
      "HTTP 401 Unauthorized",
      "server answered 403",
      "Error: Invalid API key provided",
      "expired token",
      "the token has expired",
      "Bad credentials",
    ]
  ) assert.equal(credentialOf(failed(message), api), "API_TOKEN", message);
  for (const message of ["exit status 1", "listening on port 4013", "file 401k.txt not found"]) {
    assert.equal(credentialOf(failed(message), api), undefined, message);
  }
  assert.equal(credentialOf(failed("HTTP 401"), pair), undefined, "two secrets: which one is not known");
  assert.equal(credentialOf(failed("missing", "SECOND_KEY"), pair), "SECOND_KEY");
  assert.equal(credentialOf(failed("missing", "OTHER"), pair), undefined, "only a secret the tool declares");
  assert.equal(credentialOf(failed("HTTP 401"), noSecrets), undefined);
  assert.equal(credentialOf(success({ status: 401 }), api), undefined);
  const badArgs = failure("invalid_args", "mode must be one of show, check (got 401)", { field: "mode" });
  assert.equal(credentialOf(badArgs, api), undefined, "the call never reached the service");
});

Deno.test("auto-heal: a tool with side effects keeps the retryable its run gave it; a read-only one is invited to retry", () => {
  const readOnly = manifest.tools.find((tool) => tool.readOnly && tool.secrets.length === 1)!;
  const writes = { ...readOnly, readOnly: false };
  // What the runner answers for a started call of a tool that may have acted: not retryable.
  const refused = failure("execution_error", "HTTP 401 Unauthorized", {
    tool: readOnly.name,
    retryable: false,
  });
  const heal = new CredentialHeal();
  const forWriter = heal.annotate(refused, writes);
  assert.equal(!forWriter.ok && forWriter.credential, readOnly.secrets[0]);
  assert.equal(!forWriter.ok && forWriter.retryable, false, "no second run of a call that may have acted");
  const forReader = new CredentialHeal().annotate(refused, readOnly);
  assert.equal(!forReader.ok && forReader.retryable, true);
});
