/**
 * The web console of `serve --console` (issue 29) against the web's attacks: a page of another site (no cookie, a
 * foreign Origin, a forged POST without the CSRF token, another Host name resolving to loopback), a second use of
 * the printed link, a confined tool dialing the console's port, and secrets in what the console serves; and the
 * Trust button of `run --console`, which records trust only from the page, for the view the person read.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SecretStore } from "../../src/state/secret_store.ts";
import { REPO } from "../support.ts";
import {
  consoleApi,
  type ConsoleServer,
  sessionCookie,
  spawnConsole,
  startConsoleServer,
  trustedWorkspace,
  until,
} from "../console_helpers.ts";
import { callTools, startChatServer } from "../agent/chat_server.ts";
import { readManifestContent } from "../../src/manifest/trust.ts";
import { readTrustRecord } from "../../src/manifest/trust_record.ts";
import { stateRoot } from "../../src/state/state.ts";
import { confinedTest } from "./helpers.ts";

/** The page's CSRF token, read as the page's script reads it. */
async function csrfOf(server: ConsoleServer, cookie: string): Promise<string> {
  const html = await (await fetch(`${server.origin}/`, { headers: { cookie } })).text();
  return /name="csrf-token" content="([0-9a-f]+)"/.exec(html)![1];
}

async function status(url: string, init: RequestInit = {}): Promise<number> {
  const response = await fetch(url, { redirect: "manual", ...init });
  await response.body?.cancel();
  return response.status;
}

interface ApprovalView {
  approvals: { id: number }[];
  calls: { outcome: string }[];
}

async function stateOf(server: ConsoleServer, cookie: string): Promise<ApprovalView> {
  return await (await fetch(`${server.origin}/api/state`, { headers: { cookie } })).json();
}

Deno.test("console: without the session cookie every page, stream and POST is refused; the link works once", async () => {
  await using server = await startConsoleServer(["--sandbox", "off"]);
  for (const path of ["/", "/console.js", "/events", "/api/state", "/api/audit"]) {
    assert.equal(await status(`${server.origin}${path}`), 403, path);
  }
  assert.equal(
    await status(`${server.origin}/api/approve`, {
      method: "POST",
      headers: { origin: server.origin, "content-type": "application/json" },
      body: JSON.stringify({ id: 1, answer: "yes" }),
    }),
    403,
  );
  // A wrong token gets nothing, and does not use up the right one.
  assert.equal(await status(`${server.origin}/?token=${"0".repeat(64)}`), 403);
  const first = await fetch(server.link, { redirect: "manual" });
  await first.body?.cancel();
  assert.equal(first.status, 303);
  const cookie = first.headers.get("set-cookie") ?? "";
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /SameSite=Strict/);
  const again = await fetch(server.link, { redirect: "manual" });
  await again.body?.cancel();
  assert.equal(again.status, 403, "the one-time link works once");
  assert.equal(again.headers.get("set-cookie"), null);
  const page = await fetch(`${server.origin}/`, { headers: { cookie: cookie.split(";")[0] } });
  await page.body?.cancel();
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-security-policy") ?? "", /^default-src 'self';/);
});

Deno.test("console: a foreign Origin, another Host, or a POST without the CSRF token is refused; the call still waits", async () => {
  await using server = await startConsoleServer(["--sandbox", "off"]);
  const cookie = await sessionCookie(server.link);
  const csrf = await csrfOf(server, cookie);
  await using connected = await server.connect();
  const call = connected.client.callTool({ name: "exec", arguments: { argv: ["true"] } });
  await until(async () => (await stateOf(server, cookie)).approvals.length === 1, "the question waits");
  const { id } = (await stateOf(server, cookie)).approvals[0];
  const post = (headers: Record<string, string>) =>
    status(`${server.origin}/api/approve`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", ...headers },
      body: JSON.stringify({ id, answer: "yes" }),
    });
  assert.equal(await post({ origin: server.origin }), 403, "no CSRF token");
  assert.equal(await post({ origin: server.origin, "x-csrf-token": "0".repeat(64) }), 403, "a wrong one");
  assert.equal(await post({ origin: "https://evil.example", "x-csrf-token": csrf }), 403, "a foreign Origin");
  assert.equal(await post({ "x-csrf-token": csrf }), 403, "no Origin on a POST");
  assert.equal(
    await status(`${server.origin}/api/state`, { headers: { cookie, origin: "http://evil.example" } }),
    403,
  );
  // A name of the attacker's that resolves to 127.0.0.1 (DNS rebinding) sends its own Host.
  const rebound = await new Promise<string>((resolve, reject) => {
    const port = Number(new URL(server.origin).port);
    Deno.connect({ hostname: "127.0.0.1", port }).then(async (conn) => {
      await conn.write(
        new TextEncoder().encode(
          `GET /api/state HTTP/1.1\r\nHost: evil.example:${port}\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`,
        ),
      );
      let text = "";
      const buffer = new Uint8Array(4096);
      for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
      conn.close();
      resolve(text);
    }, reject);
  });
  assert.match(rebound, /^HTTP\/1\.1 403/);
  assert.equal((await stateOf(server, cookie)).approvals.length, 1, "no refused request answered it");
  assert.equal(
    await post({ origin: server.origin, "x-csrf-token": csrf }),
    200,
    "the console's own page can answer",
  );
  const result = await call;
  assert.notEqual(result.isError, true, JSON.stringify(result));
});

confinedTest(
  "console: a confined tool without the network cannot reach the console's port (the host can)",
  async () => {
    await using server = await startConsoleServer(["--sandbox", "require", "--yes"]);
    const port = new URL(server.origin).port;
    const dial = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected || echo refused`;
    // The same line on the host reaches it: the probe works.
    const host = await new Deno.Command("bash", { args: ["-c", dial], stdout: "piped", stderr: "null" })
      .output();
    assert.equal(new TextDecoder().decode(host.stdout).trim(), "connected");
    await using connected = await server.connect();
    const result = await connected.client.callTool({
      name: "exec",
      arguments: { argv: ["bash", "-c", dial] },
    });
    const out = (result.structuredContent as { stdout?: string }).stdout ?? JSON.stringify(result);
    assert.equal(out.trim(), "refused", JSON.stringify(result));
  },
);

Deno.test("console: a stored secret a tool prints is masked in every page, stream and view the console serves", async () => {
  const VALUE = "tok-console-5f3a9c1e7d";
  const config = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_console_config_" }));
  try {
    const env = { XDG_CONFIG_HOME: config, XDG_STATE_HOME: join(config, "state") };
    await new SecretStore({ env, keyring: null }).set("API_TOKEN", VALUE);
    await using server = await startConsoleServer(
      ["--sandbox", "off", "--yes"],
      env,
      join(REPO, "tests", "fixtures", "secrets", "tools.json"),
    );
    const cookie = await sessionCookie(server.link);
    await using connected = await server.connect();
    const result = await connected.client.callTool({ name: "api", arguments: { mode: "show" } });
    assert.match(JSON.stringify(result), /\[REDACTED\]/, "the tool printed the stored value");
    // A model that learned the value sends it back as an argument: the console shows the call, masked.
    await connected.client.callTool({ name: "api", arguments: { mode: VALUE } });
    // The first event of the stream, as a browser reads it.
    const events = await fetch(`${server.origin}/events`, { headers: { cookie } });
    const reader = events.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const served = [first];
    for (
      const path of ["/", "/console.js", "/console.css", "/api/state", "/api/audit", "/api/audit?tool=api"]
    ) {
      served.push(await (await fetch(`${server.origin}${path}`, { headers: { cookie } })).text());
    }
    const all = served.join("\n");
    assert.match(all, /"tool":"api"/, "the call is shown");
    assert.match(all, /\{\\"mode\\":\\"\[REDACTED\]\\"\}/, "its argument is shown masked");
    assert.ok(!all.includes(VALUE), "no served text holds the secret");
  } finally {
    await Deno.remove(config, { recursive: true });
  }
});

Deno.test("console: the Trust button refuses a request without the cookie, with a foreign Origin, or without the CSRF token; nothing is recorded", async () => {
  await using ws = await trustedWorkspace();
  // The model's call waits for an answer in the console: the run stays up while the Trust button is tried.
  await using chat = startChatServer([callTools([{ id: "c1", name: "report", args: { topic: "x" } }])]);
  await using run = await spawnConsole(
    ["run", "--prompt", "go", "--model", "m", "--base-url", chat.baseUrl, "--console", "0"],
    { cwd: ws.workspace, env: ws.env },
  );
  const api = await consoleApi(run.origin, run.link);
  await until(async () => (await api.get("/api/state")).approvals.length === 1, "the call waits");
  // The manifest changes under the run: the view shows it, and a Trust would record the new content.
  const path = join(ws.workspace, "tools.json");
  const manifest = JSON.parse(await Deno.readTextFile(path));
  manifest.tools[0].command = ["./tools/bin/report", "--more"];
  await Deno.writeTextFile(path, JSON.stringify(manifest));
  const view = await api.get("/api/trust");
  assert.equal(view.manifest.state, "changed");
  assert.match(view.manifest.changes.join("\n"), /command .*-> .*--more/);
  const { version } = view;

  for (const path of ["/api/trust", "/api/confinement"]) {
    assert.equal(await status(`${run.origin}${path}`), 403);
  }
  const body = JSON.stringify({ version });
  const json = { "content-type": "application/json" };
  // No cookie (a page of another site cannot send it: SameSite=Strict).
  assert.equal(
    await status(`${run.origin}/api/trust`, {
      method: "POST",
      headers: { ...json, origin: run.origin, "x-csrf-token": api.csrf },
      body,
    }),
    403,
  );
  // A foreign Origin, even with the cookie and the token; and a form post from another site.
  assert.equal(await api.post("/api/trust", { version }, { origin: "http://evil.example" }), 403);
  assert.equal(
    await status(`${run.origin}/api/trust`, {
      method: "POST",
      headers: {
        cookie: api.cookie,
        origin: "http://evil.example",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: `version=${version}`,
    }),
    403,
  );
  // No CSRF token, a wrong one, or no Origin at all.
  assert.equal(await api.post("/api/trust", { version }, { "x-csrf-token": "" }), 403);
  assert.equal(await api.post("/api/trust", { version }, { "x-csrf-token": "0".repeat(64) }), 403);
  assert.equal(
    await status(`${run.origin}/api/trust`, {
      method: "POST",
      headers: { ...json, cookie: api.cookie, "x-csrf-token": api.csrf },
      body,
    }),
    403,
  );
  // A Trust of a view that is not the one shown now (changed since it was read) records nothing either.
  assert.equal(await api.post("/api/trust", { version: "0".repeat(64) }), 409);
  assert.equal((await api.get("/api/trust")).manifest.state, "changed", "nothing was recorded");
  const content = await readManifestContent(path);
  assert.ok(
    readTrustRecord(stateRoot(ws.env), content!.realPath) !== undefined,
    "the earlier trust is there",
  );
  assert.notEqual(readTrustRecord(stateRoot(ws.env), content!.realPath)?.digest, content!.digest);

  // The person's own click, from the page: recorded as `toolgate trust` records it.
  assert.equal(await api.post("/api/trust", { version }), 200);
  assert.equal((await api.get("/api/trust")).manifest.state, "trusted");
  assert.equal(readTrustRecord(stateRoot(ws.env), content!.realPath)?.digest, content!.digest);
});
