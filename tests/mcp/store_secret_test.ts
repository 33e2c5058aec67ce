/**
 * store_secret over MCP (issue 15): `toolgate serve` over stdio, driven by the SDK's client. A client that declares
 * elicitation shows its user a form; the value typed there is stored (the operator allowed it:
 * `--allow-store-secrets`; else it lives in the session only, tests/security/mcp_store_secret_test.ts) and given to
 * the tool that declares it, and the answer is only {"stored": NAME}. A client that cannot be asked gets user_denied, and nothing is stored.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { SecretStore } from "../../src/state/secret_store.ts";
import { scratch } from "../executor_helpers.ts";
import { baseEnv, envelopeOf, serveArgs } from "./helpers.ts";
import { REPO } from "../support.ts";

const SECRETS_TOOLS = join(REPO, "tests", "fixtures", "secrets", "tools.json");
const VALID = "valid-token-2026-xyz";

/** `toolgate serve` over the secrets fixture with its own config and state folders, and a connected client. */
async function connect(
  dir: string,
  elicit?: (
    message: string,
    schema: unknown,
  ) => { action: "accept" | "decline"; content?: Record<string, unknown> },
  extra: readonly string[] = [],
): Promise<AsyncDisposable & { client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: serveArgs(extra, dir, SECRETS_TOOLS),
    cwd: REPO,
    env: { ...baseEnv(), XDG_STATE_HOME: join(dir, "state"), XDG_CONFIG_HOME: join(dir, "config") },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "toolgate-tests", version: "1.0.0" }, {
    capabilities: elicit ? { elicitation: {} } : {},
  });
  if (elicit) {
    client.setRequestHandler(
      ElicitRequestSchema,
      (request) =>
        elicit(
          String(request.params.message),
          "requestedSchema" in request.params ? request.params.requestedSchema : undefined,
        ),
    );
  }
  await client.connect(transport);
  return { client, stderr: () => stderr, [Symbol.asyncDispose]: () => client.close() };
}

Deno.test("serve --allow-store-secrets: store_secret through MCP elicitation stores the value and gives it to the tool, never to the client's model", async () => {
  await using dir = await scratch();
  const asked: { message: string; schema: unknown }[] = [];
  await using served = await connect(dir.path, (message, schema) => {
    asked.push({ message, schema });
    return { action: "accept", content: { value: VALID } };
  }, ["--allow-store-secrets"]);
  const { client } = served;
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["api", "always401", "pair", "store_secret"]);

  const before = envelopeOf(await client.callTool({ name: "api", arguments: { mode: "check" } }));
  assert.equal(before.kind, "unavailable");
  assert.equal(before.credential, "API_TOKEN");

  const stored = await client.callTool({
    name: "store_secret",
    arguments: { name: "API_TOKEN", reason: "the API needs a token" },
  });
  assert.deepEqual(envelopeOf(stored), { ok: true, result: { stored: "API_TOKEN" } });
  assert.deepEqual(stored.structuredContent, { stored: "API_TOKEN" });
  assert.equal(asked.length, 1);
  assert.match(
    asked[0].message,
    /asks for the secret API_TOKEN, which api, always401 receive\. Its reason: "the API needs a token"/,
  );
  assert.deepEqual((asked[0].schema as { required: string[] }).required, ["value"]);

  const after = await client.callTool({ name: "api", arguments: { mode: "check" } });
  assert.deepEqual(after.structuredContent, { user: "octocat" }, "the tool got the typed value");
  const shown = JSON.stringify(await client.callTool({ name: "api", arguments: { mode: "show" } }));
  assert.ok(!shown.includes(VALID), shown);
  assert.match(shown, /the token is \[REDACTED\]/);
  const env = { XDG_STATE_HOME: join(dir.path, "state"), XDG_CONFIG_HOME: join(dir.path, "config") };
  assert.deepEqual(await new SecretStore({ env, keyring: null }).values(), { API_TOKEN: VALID });
  assert.ok(!served.stderr().includes(VALID));
});

Deno.test("serve: store_secret for a client without elicitation, or a declined form, is user_denied and stores nothing", async () => {
  await using dir = await scratch();
  await using plain = await connect(dir.path);
  const denied = envelopeOf(
    await plain.client.callTool({ name: "store_secret", arguments: { name: "API_TOKEN", reason: "needed" } }),
  );
  assert.equal(denied.kind, "user_denied");
  assert.equal(denied.credential, "API_TOKEN");
  assert.match(String(denied.message), /did not declare the elicitation capability/);

  await using declining = await connect(dir.path, () => ({ action: "decline" }));
  const declined = envelopeOf(
    await declining.client.callTool({
      name: "store_secret",
      arguments: { name: "api_token", reason: "needed" },
    }),
  );
  assert.equal(declined.kind, "user_denied");
  assert.match(String(declined.message), /gave no value for API_TOKEN/);
  await assert.rejects(Deno.stat(join(dir.path, "config", "toolgate", "secrets.json")), Deno.errors.NotFound);
});
