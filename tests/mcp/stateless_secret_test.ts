/**
 * `store_secret` for a 2026-07-28 client over HTTP: a URL elicitation round. The client is answered a page's URL
 * (and a signed request state); the person types the value into that page, served by toolgate; the client's
 * retry stores it in that caller's memory for its later calls. The value never passes through the client: not in
 * what it was sent, not in what it sends.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { scratch } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { startHttp, TOKEN } from "./helpers.ts";
import { statelessRequest } from "./stateless_support.ts";

const SECRETS_TOOLS = join(REPO, "tests", "fixtures", "secrets", "tools.json");
const VALID = "valid-token-2026-xyz";

Deno.test("serve --http: a stateless client's store_secret is a URL elicitation; the value goes to toolgate's page only", async () => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, {
    TOOLGATE_MCP_TOKEN: TOKEN,
    XDG_STATE_HOME: join(dir.path, "state"),
    XDG_CONFIG_HOME: join(dir.path, "config"),
  }, SECRETS_TOOLS);
  const seen: string[] = [];
  const pages: { url: string; html: string; csp: string | null; again: number }[] = [];
  const client = new Client({ name: "modern", version: "1" }, {
    capabilities: { elicitation: { form: {}, url: {} } },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  client.setRequestHandler("elicitation/create", async (request) => {
    seen.push(JSON.stringify(request.params));
    assert.equal(request.params.mode, "url");
    const url = (request.params as { url: string }).url;
    // The person opens the page in a browser and types the value there.
    const page = await fetch(url);
    const html = await page.text();
    const posted = await fetch(url, { method: "POST", body: new URLSearchParams({ value: VALID }) });
    await posted.body?.cancel();
    assert.equal(posted.status, 200);
    const again = await fetch(url, { method: "POST", body: new URLSearchParams({ value: "other" }) });
    await again.body?.cancel();
    pages.push({ url, html, csp: page.headers.get("content-security-policy"), again: again.status });
    return { action: "accept" };
  });
  const sent: string[] = [];
  const transport = new StreamableHTTPClientTransport(server.url, {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    fetch: (input, init) => {
      if (typeof init?.body === "string") sent.push(init.body);
      return fetch(input, init);
    },
  });
  await client.connect(transport);
  try {
    const before = await client.callTool({ name: "api", arguments: { mode: "check" } });
    assert.equal((before.structuredContent as { kind: string }).kind, "unavailable");

    const stored = await client.callTool({
      name: "store_secret",
      arguments: { name: "API_TOKEN", reason: "the API needs <b>a token</b>" },
    });
    assert.deepEqual(stored.structuredContent, { stored: "API_TOKEN" }, JSON.stringify(stored));
    assert.equal(pages.length, 1);
    const [page] = pages;
    assert.match(page.url, new RegExp(`^${server.url.origin}/secret/[\\w-]{22}$`));
    assert.match(page.html, /API_TOKEN/);
    assert.match(page.html, /the API needs &#60;b&#62;a token&#60;\/b&#62;/, "the model's words are escaped");
    assert.match(page.csp ?? "", /default-src 'none'/);
    assert.equal(page.again, 404, "a page takes one value");
    assert.equal((await fetch(page.url)).status, 404, "and is gone once answered");

    // The caller's later calls get the value; the client never saw or sent it.
    const after = await client.callTool({ name: "api", arguments: { mode: "check" } });
    assert.deepEqual(after.structuredContent, { user: "octocat" });
    for (const text of [...seen, ...sent]) assert.ok(!text.includes(VALID), text);
    assert.ok(!server.stderr().includes(VALID));
    // Another client name has no value: the secret is that caller's.
    const { body } = await statelessRequest(
      server.url,
      "tools/call",
      { name: "api", arguments: { mode: "check" } },
      { caps: {}, client: "someone-else", id: 1 },
    );
    assert.equal(body.result.structuredContent.kind, "unavailable");
    // A page no round opened is not found, whatever its path.
    for (const path of ["/secret/", "/secret/AAAAAAAAAAAAAAAAAAAAAA", "/secret/../mcp"]) {
      const guessed = await fetch(new URL(path, server.url), {
        method: "POST",
        body: new URLSearchParams({ value: "x" }),
      });
      await guessed.body?.cancel();
      assert.notEqual(guessed.status, 200, path);
    }
  } finally {
    await client.close();
  }
});
