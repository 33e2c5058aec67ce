/**
 * The approval rule for an MCP server's tools: one the user's manifest lists in its server's `readOnly` runs
 * unasked though the server's profile writes (the profile still bounds the process); one it does not list needs
 * approval, whatever the server's annotations claim; the network is never waived; and the reason is worded from
 * the server's profile.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadManifest } from "../../src/manifest/manifest.ts";
import type { ServerSpec } from "../../src/manifest/server_spec.ts";
import { upstreamSpec } from "../../src/gateway/gateway_tools.ts";
import type { PreparedCall } from "../../src/policy/prepared_call.ts";
import { Policy } from "../../src/policy/policy.ts";
import { assessCall, isReadOnlyCall } from "../../src/policy/risk.ts";
import { tempDir } from "../support.ts";

/** The servers of a real manifest holding `mcpServers`. */
async function serversOf(mcpServers: Record<string, unknown>): Promise<Map<string, ServerSpec>> {
  await using dir = await tempDir();
  const path = join(dir.path, "tools.json");
  await Deno.writeTextFile(path, JSON.stringify({ tools: [], mcpServers }));
  const loaded = await loadManifest(path);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return new Map(loaded.manifest.servers.map((server) => [server.name, server]));
}

const servers = await serversOf({
  // The README's gateway example: the filesystem server, writing the workspace, its reads declared.
  fs: {
    command: "node",
    args: ["index.js", "."],
    permissions: { read: ["/opt/servers"], write: ["."], net: false },
    readOnly: ["read_text_file", "list_directory"],
  },
  notes: {
    command: "node",
    args: ["notes.js"],
    permissions: { write: ["/srv/notes", "cache"], net: false },
    readOnly: ["search"],
  },
  web: { command: "node", args: ["web.js"], permissions: { net: ["api.example.com"] }, readOnly: ["lookup"] },
});

/** A call of `server`'s tool `name`, as the gateway lists it (annotations as the server sends them). */
function upstreamCall(server: string, name: string, annotations?: Record<string, unknown>): PreparedCall {
  const spec = upstreamSpec(servers.get(server)!, {
    name,
    inputSchema: { type: "object" },
    ...(annotations ? { annotations } : {}),
  }, 0);
  assert.ok(spec);
  return { tool: spec, args: {}, argsText: "{}" };
}

Deno.test("policy: an MCP server's tool its manifest entry lists in readOnly runs unasked, though the server's profile writes", async () => {
  const read = upstreamCall("fs", "read_text_file");
  assert.equal(read.tool.profile.write.length, 1, "the server's profile writes the workspace");
  assert.equal(isReadOnlyCall(read), true);
  assert.deepEqual(assessCall(read), { changes: false, egress: false });
  // Nobody to ask, no flag: still runs (serve without elicitation, the agent loop without a terminal).
  assert.deepEqual(await new Policy().decide(read), { approved: true, by: "read-only" });
  assert.deepEqual(await new Policy().decide(upstreamCall("fs", "list_directory")), {
    approved: true,
    by: "read-only",
  });
});

Deno.test("policy: a server's own readOnlyHint never makes its tool free; the reason names what its server may write", async () => {
  const write = upstreamCall("fs", "write_file", { readOnlyHint: true, destructiveHint: false });
  assert.equal(isReadOnlyCall(write), false);
  const verdict = await new Policy().decide(write);
  assert.equal(verdict.approved, false);
  if (verdict.approved) return;
  assert.equal(verdict.envelope.kind, "rejected");
  assert.match(verdict.envelope.message, /\(its server "fs" may write the workspace\)/);
  assert.doesNotMatch(verdict.envelope.message, /change files or run programs/);

  const questions: string[] = [];
  await new Policy({
    ask: (question) => {
      questions.push(question.reason, question.lines[0]);
      return Promise.resolve("no");
    },
  }).decide(upstreamCall("notes", "append"));
  assert.deepEqual(questions.slice(0, 1), [`its server "notes" may write /srv/notes, the workspace's cache`]);
  assert.match(questions[1], /run mcp__notes__append: its server "notes" may write \/srv\/notes/);
});

Deno.test("policy: readOnly never waives the network: a declared read of a server that reaches a host needs approval, named", async () => {
  const lookup = upstreamCall("web", "lookup");
  assert.deepEqual(assessCall(lookup), { changes: false, egress: true });
  const verdict = await new Policy().decide(lookup);
  assert.equal(verdict.approved, false);
  if (verdict.approved) return;
  assert.match(
    verdict.envelope.message,
    /it can send data off the machine \(its server "web" may reach api\.example\.com\)/,
  );
  assert.doesNotMatch(verdict.envelope.message, /may write/);
  // Its undeclared tool: both, the change worded as the list it is missing from.
  const post = await new Policy().decide(upstreamCall("web", "post"));
  assert.equal(post.approved, false);
  if (post.approved) return;
  assert.match(
    post.envelope.message,
    /it is not in its server's readOnly list: it may run programs, and it can send/,
  );
});

Deno.test("policy: a server's request for a model's answer is approved by --allow-tools naming its tool or its server whole, by nothing else", async () => {
  const { tool } = upstreamCall("fs", "read_text_file");
  const request = {
    messages: [{ role: "user" as const, content: { type: "text" as const, text: "Sum up." } }],
    maxTokens: 10,
  };
  // A read the manifest declares runs unasked; what its server then sends a model does not.
  const nobody = await new Policy().decideSampling(tool, request);
  assert.equal(nobody.approved, false);
  assert.deepEqual(await new Policy({ allowTools: ["mcp__fs__*"] }).decideSampling(tool, request), {
    approved: true,
    by: "allow-tools",
  });
  assert.deepEqual(
    await new Policy({ allowTools: ["mcp__fs__read_text_file"] }).decideSampling(tool, request),
    {
      approved: true,
      by: "allow-tools",
    },
  );
  // Another server's wildcard approves nothing here.
  assert.equal(
    (await new Policy({ allowTools: ["mcp__notes__*"] }).decideSampling(tool, request)).approved,
    false,
  );
});
