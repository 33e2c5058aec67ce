/**
 * A client's roots are information for a tool, never a grant: a confined tool that asks for them (`"asks":
 * ["roots"]`) and is told of a folder outside its workspace still cannot read or write there; its sandbox stays as
 * its profile says.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorFor, manifestOf } from "../executor_helpers.ts";
import { confinedTest, realTempDir } from "./helpers.ts";

/** Asks for the client's roots, then tries to read and to write in the first one; says what it could do. */
const PROBE = `#!/bin/sh
read -r args
printf '%s\\n' '{"type":"roots","id":"r"}'
read -r answer
root=$(printf '%s' "$answer" | sed 's|.*"uri": *"file://\\([^"]*\\)".*|\\1|')
if cat "$root/secret.txt" >/dev/null 2>&1; then read=true; else read=false; fi
if echo x > "$root/planted.txt" 2>/dev/null; then wrote=true; else wrote=false; fi
printf '{"type":"result","result":{"root":"%s","read":%s,"wrote":%s}}\\n' "$root" "$read" "$wrote"
`;

confinedTest(
  "a root the client lists outside the workspace opens nothing: the confined tool can neither read nor write it",
  async () => {
    const workspace = await realTempDir();
    const outside = await realTempDir();
    const tools = await realTempDir();
    try {
      await Deno.writeTextFile(join(outside, "secret.txt"), "the client's own file");
      const program = join(tools, "probe");
      await Deno.writeTextFile(program, PROBE);
      await Deno.chmod(program, 0o755);
      const manifest = manifestOf([{
        name: "t",
        command: [program],
        protocol: "toolgate/1",
        asks: ["roots"],
        permissions: "workspace",
      }]);
      const executor = executorFor(manifest, { cwd: workspace, sandbox: "require" });
      const envelope = await executor.call("t", "{}", {
        questions: {
          roots: () => Promise.resolve({ roots: [{ uri: `file://${outside}`, name: "theirs" }] }),
        },
      }) as Record<string, unknown>;
      assert.equal(envelope.ok, true, JSON.stringify(envelope));
      assert.deepEqual(envelope.result, { root: outside, read: false, wrote: false });
      assert.equal(await Deno.stat(join(outside, "planted.txt")).then(() => true, () => false), false);
      // The same tool reads its workspace: the probe is not what failed.
      await Deno.writeTextFile(join(workspace, "secret.txt"), "the workspace's file");
      const inside = await executor.call("t", "{}", {
        questions: { roots: () => Promise.resolve({ roots: [{ uri: `file://${workspace}` }] }) },
      }) as Record<string, unknown>;
      assert.deepEqual(inside.result, { root: workspace, read: true, wrote: true });
    } finally {
      for (const dir of [workspace, outside, tools]) await Deno.remove(dir, { recursive: true });
    }
  },
);
