/**
 * The check before each start of a trusted manifest's tool or MCP server: its program, and the code its command
 * line names (a script, a folder, a `python -m` package), are still what the user trusted (`trust.ts` pinned them
 * when the manifest was checked). A file rewritten or swapped since, in a long-running `serve` say, is not run.
 *
 * Not here: what is pinned (`trust.ts`), how a file is pinned and checked (`file_pins.ts`).
 *
 * @module
 */
import { dirname } from "../base/paths.ts";
import { changedCode } from "./code_paths.ts";
import { stillPinned } from "./file_pins.ts";
import type { Manifest, ToolSpec } from "./manifest_types.ts";

function realOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/**
 * Why `tool` (a server's spec has index -1) must not start because what it runs is not what the user trusted, or
 * `undefined`: its program is not among the manifest's pinned programs or changed, or a file of the code its
 * command line names changed. A manifest with no pins (named by the user, or toolgate's own) and a built-in tool
 * are never refused here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { untrustedStart } from "./trust_check.ts";
 * const manifest = { path: "/p/tools.json", pinnedCode: new Map() } as never;
 * const tool = { index: 0, program: "/p/tools/bin/t", args: [] } as never;
 * assert.equal(await untrustedStart(manifest, tool, "/p"), undefined);
 * ```
 */
export async function untrustedStart(
  manifest: Manifest,
  tool: ToolSpec,
  workspace: string,
): Promise<string | undefined> {
  if (tool.builtin !== undefined) return undefined;
  const pinned = manifest.pinned;
  if (pinned !== undefined) {
    // A trusted manifest's program runs only as it was trusted: not one swapped or rewritten since.
    const trusted = pinned.get(tool.program);
    if (trusted === undefined || !(await stillPinned(tool.program, trusted))) {
      return `The tool's program ${tool.program} is not what the user trusted (it changed, or could not be read, ` +
        "when the manifest was trusted); it was not run. The user can check it and run `toolgate trust`.";
    }
  }
  const code = manifest.pinnedCode;
  if (code === undefined || code.size === 0) return undefined;
  const bases = [dirname(realOr(manifest.path)), realOr(workspace)];
  const changed = await changedCode(code, [tool.program, ...tool.args], bases);
  if (changed === undefined) return undefined;
  return `The ${
    tool.index < 0 ? "server" : "tool"
  }'s code ${changed} is not what the user trusted (it changed ` +
    "since the manifest was trusted); it was not run. The user can check it and run `toolgate trust`.";
}
