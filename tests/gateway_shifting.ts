/**
 * The gateway tests' own MCP server, tests/fixtures/gateway/shifting_server.mjs (its tools change while it runs; it
 * logs and reports progress; it records every request it receives), in a trusted project, and a scripted client of
 * `toolgate serve` there.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ToolListChangedNotificationSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { MODULES, project } from "./gateway_support.ts";
import { denoDir, launcherArgs, REPO } from "./support.ts";

/** The test server of its own: it records what it receives in the workspace. */
export const SHIFTING_SERVER = join(REPO, "tests", "fixtures", "gateway", "shifting_server.mjs");

/** A trusted project whose one server, `own`, is the shifting server (`args` after its script). */
export async function shiftingProject(
  args: string[] = [],
  extra: Record<string, unknown> = {},
  env: Record<string, string> = {},
) {
  const p = await project({
    own: {
      command: "node",
      args: [SHIFTING_SERVER, ...args],
      permissions: { read: [MODULES, join(REPO, "tests", "fixtures", "gateway")], write: ["."] },
      ...extra,
    },
  });
  const trust = await p.run(["trust"], undefined, env);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  // What `trust` made the server receive is not the test's.
  await Deno.remove(join(p.dir.path, "received.jsonl")).catch(() => {});
  /** What the server received, one entry per request, in order. */
  const received = async (): Promise<
    { method: string; name?: string; arguments?: Record<string, unknown>; level?: string }[]
  > => {
    try {
      const text = await Deno.readTextFile(join(p.dir.path, "received.jsonl"));
      return text.trim().split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
    } catch {
      return [];
    }
  };
  return Object.assign(p, { received });
}

/** The client of `toolgate serve` in `dir`; `changes()` counts serve's `tools/list_changed`. */
export async function serveClient(dir: string, env: Record<string, string>, extra: string[]) {
  const client = new Client({ name: "gateway-pin-test", version: "1.0.0" });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  await client.connect(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: launcherArgs(["serve", ...extra]),
      cwd: dir,
      // A HOME of the test's own keeps this user's Deno cache.
      env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...env },
      stderr: "pipe",
    }),
  );
  return Object.assign(client, { changes: () => changes });
}
