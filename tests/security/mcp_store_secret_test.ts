// An MCP client rewrites the secret store (issue 24, item 4): a client that declares elicitation calls
// `store_secret API_TOKEN` in `serve` and answers its own form. The value must live in that session's memory only:
// the store's file is unchanged, the session's next call gets the value, another session does not. Only the
// operator's `--allow-store-secrets` lets it write the store, and then a replacement is said in the form and in
// the audit line.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { SecretStore } from "../../src/state/secret_store.ts";
import { connectHttp, envelopeOf, type HttpConnected, type HttpServer, spawnHttp } from "../mcp/helpers.ts";
import { cliArgs, GRANTS, REPO } from "../support.ts";
import { allText } from "./hostile.ts";
import { realTempDir } from "./helpers.ts";

const SECRETS_TOOLS = join(REPO, "tests", "fixtures", "secrets", "tools.json");
/** The token the fixture's `api` accepts: what the attacking client types into its own form. */
const VALID = "valid-token-2026-xyz";
/** What the person stored before: the store must still hold it. */
const STORED = "old-token-kept-0123";
const TOKEN = "mcp-test-token-0123456789";

/** A scratch folder with its own state and config folders, the store holding API_TOKEN already. */
async function setUp(): Promise<
  { dir: string; env: Record<string, string>; storeFile: string; cleanup: () => Promise<void> }
> {
  const dir = await realTempDir("toolgate_mcp_store_");
  const env = { XDG_STATE_HOME: join(dir, "state"), XDG_CONFIG_HOME: join(dir, "config") };
  const store = new SecretStore({ env, keyring: null });
  await store.set("API_TOKEN", STORED);
  await Deno.mkdir(join(dir, "work"));
  return { dir, env, storeFile: store.path, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

/** `toolgate serve --http 0` over the secrets fixture, audited in the state folder; resolves once it listens. */
function serve(
  dir: string,
  env: Record<string, string>,
  extra: readonly string[] = [],
): Promise<HttpServer> {
  return spawnHttp(
    Deno.execPath(),
    cliArgs([...GRANTS.broad, "--allow-net=127.0.0.1"], [
      "serve",
      "--http",
      "0",
      "--tools",
      SECRETS_TOOLS,
      "--sandbox",
      "off",
      "--cwd",
      join(dir, "work"),
      ...extra,
    ]),
    { ...env, TOOLGATE_MCP_TOKEN: TOKEN },
  );
}

/** A client that declares elicitation and answers every form itself with `value`; the forms' messages land in `asked`. */
function attacker(url: URL, value: string, asked: string[]): Promise<HttpConnected> {
  return connectHttp(url, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(String(request.params.message));
        return { action: "accept", content: { value } };
      }),
  });
}

function check(session: HttpConnected): Promise<Record<string, unknown>> {
  return session.client.callTool({ name: "api", arguments: { mode: "check" } }).then(envelopeOf);
}

/** The text of every audit log (`*.log`) under `dir`. */
async function auditText(dir: string): Promise<string> {
  let out = "";
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out += await auditText(path);
    else if (entry.isFile && entry.name.endsWith(".log")) out += await Deno.readTextFile(path);
  }
  return out;
}

/** The audit lines of `store_secret` under the state folder. */
async function storeSecretLines(env: Record<string, string>): Promise<Record<string, unknown>[]> {
  const text = await auditText(env.XDG_STATE_HOME);
  return text.split("\n").filter((line) => line.includes('"tool":"store_secret"')).map((line) =>
    JSON.parse(line)
  );
}

Deno.test("an MCP client answering its own store_secret form changes no stored secret: the value is its session's alone", async () => {
  const { dir, env, storeFile, cleanup } = await setUp();
  try {
    const before = await Deno.readFile(storeFile);
    {
      await using server = await serve(dir, env);
      const asked: string[] = [];
      await using mallory = await attacker(server.url, VALID, asked);
      await using other = await connectHttp(server.url, TOKEN);
      assert.equal((await check(mallory)).ok, false, "the stored token is not the valid one");

      const stored = envelopeOf(
        await mallory.client.callTool({
          name: "store_secret",
          arguments: { name: "API_TOKEN", reason: "the API answered 401" },
        }),
      );
      assert.deepEqual(stored, { ok: true, result: { stored: "API_TOKEN" } });
      assert.equal(asked.length, 1);
      assert.match(asked[0], /in this MCP session's memory only \(not in its secret store\)/);

      assert.deepEqual(
        await check(mallory),
        { ok: true, result: { user: "octocat" } },
        "the session's next call",
      );
      const other401 = await check(other);
      assert.equal(other401.ok, false, "another session still gets the stored value");
      assert.match(String(other401.message), /401/);
      const shown = JSON.stringify(
        await mallory.client.callTool({ name: "api", arguments: { mode: "show" } }),
      );
      assert.ok(!shown.includes(VALID), shown);
      assert.match(shown, /the token is \[REDACTED\]/);
    }
    assert.deepEqual(await Deno.readFile(storeFile), before, "the store's file is unchanged");
    assert.deepEqual(await new SecretStore({ env, keyring: null }).values(), { API_TOKEN: STORED });
    const [line] = await storeSecretLines(env);
    assert.equal(line.outcome, "ok");
    assert.equal(line.secret, "API_TOKEN");
    assert.equal(line.kept, "session");
    assert.ok(!(await allText(env.XDG_STATE_HOME)).includes(VALID), "no value in the state folder");
  } finally {
    await cleanup();
  }
});

Deno.test("with --allow-store-secrets, replacing a stored secret is said in the form and in the audit line", async () => {
  const { dir, env, cleanup } = await setUp();
  try {
    const asked: string[] = [];
    {
      await using server = await serve(dir, env, ["--allow-store-secrets"]);
      await using client = await attacker(server.url, VALID, asked);
      for (const name of ["API_TOKEN", "FIRST_KEY"]) {
        const envelope = envelopeOf(
          await client.client.callTool({ name: "store_secret", arguments: { name, reason: "needed" } }),
        );
        assert.deepEqual(envelope, { ok: true, result: { stored: name } });
      }
      assert.deepEqual(await check(client), { ok: true, result: { user: "octocat" } });
    }
    assert.equal(asked.length, 2);
    assert.match(asked[0], /This REPLACES the value of API_TOKEN already in toolgate's secret store/);
    assert.doesNotMatch(asked[1], /REPLACES/, "nothing stored under FIRST_KEY: nothing to replace");
    assert.deepEqual(await new SecretStore({ env, keyring: null }).values(), {
      API_TOKEN: VALID,
      FIRST_KEY: VALID,
    });
    const lines = await storeSecretLines(env);
    assert.deepEqual(lines.map((line) => [line.secret, line.kept, line.replaced]), [
      ["API_TOKEN", "store", true],
      ["FIRST_KEY", "store", false],
    ]);
  } finally {
    await cleanup();
  }
});
