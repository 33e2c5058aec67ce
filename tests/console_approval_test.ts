/**
 * Approvals through the web console of `serve --console` (issue 29), over its HTTP API as the page uses it: a call
 * no client can be asked about waits for the console instead of being refused; when the client can be asked too,
 * the first answer wins (the console's here, the client's there) and the other question is withdrawn; the audit
 * line says who approved.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { type ConsoleServer, sessionCookie, startConsoleServer, until } from "./console_helpers.ts";
import { connectHttp, envelopeOf, TOKEN } from "./mcp/helpers.ts";

interface View {
  approvals: { id: number; tool: string; lines: string[] }[];
}

async function console(server: ConsoleServer) {
  const cookie = await sessionCookie(server.link);
  const html = await (await fetch(`${server.origin}/`, { headers: { cookie } })).text();
  const csrf = /name="csrf-token" content="([0-9a-f]+)"/.exec(html)![1];
  return {
    state: async (): Promise<View> =>
      await (await fetch(`${server.origin}/api/state`, { headers: { cookie } })).json(),
    answer: async (id: number, answer: string) => {
      const response = await fetch(`${server.origin}/api/approve`, {
        method: "POST",
        headers: { cookie, origin: server.origin, "x-csrf-token": csrf, "content-type": "application/json" },
        body: JSON.stringify({ id, answer }),
      });
      await response.body?.cancel();
      return response.status;
    },
    audit: async (): Promise<Record<string, unknown>[]> =>
      await (await fetch(`${server.origin}/api/audit?tool=exec`, { headers: { cookie } })).json(),
  };
}

Deno.test("console: a call no client can be asked about waits for the console; deny refuses it, allow runs it (approved_by: console)", async () => {
  await using server = await startConsoleServer(["--sandbox", "off"]);
  const view = await console(server);
  await using connected = await server.connect();
  const denied = connected.client.callTool({ name: "exec", arguments: { argv: ["echo", "one"] } });
  await until(async () => (await view.state()).approvals.length === 1, "the question waits in the console");
  const [question] = (await view.state()).approvals;
  assert.equal(
    question.lines[0],
    "toolgate: the model asks to run exec: it may write the workspace.",
  );
  assert.equal(await view.answer(question.id, "no"), 200);
  assert.equal(envelopeOf(await denied).kind, "user_denied");
  assert.equal(await view.answer(question.id, "yes"), 409, "an answered question takes no second answer");

  const allowed = connected.client.callTool({ name: "exec", arguments: { argv: ["echo", "two"] } });
  await until(async () => (await view.state()).approvals.length === 1, "the second question waits");
  assert.equal(await view.answer((await view.state()).approvals[0].id, "yes"), 200);
  const result = await allowed;
  assert.equal((result.structuredContent as { stdout: string }).stdout, "two\n");
  const audit = await view.audit();
  assert.deepEqual(audit.map((r) => [r.outcome, r.approved_by]), [["user_denied", undefined], [
    "ok",
    "console",
  ]]);
});

Deno.test("console: with a client that can be asked too, the first answer wins and the other question is withdrawn", async () => {
  await using server = await startConsoleServer(["--sandbox", "off"]);
  const view = await console(server);
  // The client's user answers only when told to: first it leaves its form open, then answers at once.
  let clientAnswers = false;
  await using connected = await connectHttp(server.mcp, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
        if (clientAnswers) return { action: "accept", content: { always: false } };
        return new Promise((resolve) =>
          extra.signal.addEventListener("abort", () => resolve({ action: "cancel" }))
        );
      }),
  });
  const first = connected.client.callTool({ name: "exec", arguments: { argv: ["echo", "console"] } });
  await until(
    async () => (await view.state()).approvals.length === 1,
    "the console is asked beside the client",
  );
  assert.equal(await view.answer((await view.state()).approvals[0].id, "yes"), 200);
  assert.equal(((await first).structuredContent as { stdout: string }).stdout, "console\n");

  clientAnswers = true;
  const second = await connected.client.callTool({ name: "exec", arguments: { argv: ["echo", "client"] } });
  assert.equal((second.structuredContent as { stdout: string }).stdout, "client\n");
  await until(async () => (await view.state()).approvals.length === 0, "the console's question is withdrawn");
  const audit = await view.audit();
  assert.deepEqual(audit.map((r) => r.approved_by), ["console", "person"]);
});
