/**
 * VS Code's `.vscode/mcp.json`: `servers`, each with a `type` (`stdio`: `command`/`args`/`env`; `http` or `sse`:
 * `url`/`headers`), and `inputs`, the values VS Code asks its user for (`promptString`, `password: true` for a
 * secret), which entries reference as `${input:ID}`. A value that references a password input is a credential,
 * whatever its variable's or header's name: it becomes a secret name, never a value in the manifest.
 *
 * Not here: the shared reading and rewiring (`servers_object.ts`), where the file is (`host_files.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { HostContext, HostFormat, HostLaunch, HostRead } from "./host_format.ts";
import { readJsonConfig } from "./json_config.ts";
import { readServers, rewireServers, type ServersShape } from "./servers_object.ts";

const INPUT = /\$\{input:([^}]+)\}/g;

/** The ids of `inputs` VS Code asks for as passwords (or any input when `passwords` cannot be told). */
function passwordInputs(value: unknown): Set<string> {
  const ids = new Set<string>();
  if (!isRecord(value) || !Array.isArray(value.inputs)) return ids;
  for (const input of value.inputs) {
    if (isRecord(input) && typeof input.id === "string" && input.password === true) ids.add(input.id);
  }
  return ids;
}

/** The shape, with the credentials that reference a password input. */
function shapeFor(value: unknown): ServersShape {
  const passwords = passwordInputs(value);
  return {
    httpKeys: ["url"],
    credentialEnv(entry) {
      const names: string[] = [];
      for (const key of ["env", "headers"]) {
        const map = entry[key];
        if (!isRecord(map)) continue;
        for (const [name, text] of Object.entries(map)) {
          if (typeof text !== "string") continue;
          // Any input: one that is no password still is something the user typed for this server, not a setting.
          if ([...text.matchAll(INPUT)].some((match) => passwords.has(match[1]) || passwords.size === 0)) {
            names.push(name);
          }
        }
      }
      return names;
    },
  };
}

/**
 * VS Code's format.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { vscode } from "./vscode.ts";
 * const text = JSON.stringify({
 *   inputs: [{ type: "promptString", id: "pat", description: "token", password: true }],
 *   servers: { gh: { type: "stdio", command: "npx", args: ["-y", "x"], env: { GH_PAT: "${input:pat}" } } },
 * });
 * const read = await vscode.read(text, { file: "mcp.json", project: "/p" });
 * assertEquals(read.ok && read.servers[0].credentialEnv, ["GH_PAT"]);
 * ```
 */
export const vscode: HostFormat = {
  id: "vscode",
  label: "VS Code",
  async read(text: string, context: HostContext): Promise<HostRead> {
    const read = await readJsonConfig(text, context.file);
    if (!read.ok) return read;
    const value = read.config.value;
    if (!isRecord(value)) return { ok: false, reason: read.config.at([], "it is not a JSON object") };
    if (context.named && value.servers === undefined) {
      return {
        ok: false,
        reason: read.config.at([], `it has no "servers" object (the shape of VS Code's mcp.json)`),
      };
    }
    if (value.inputs !== undefined && !Array.isArray(value.inputs)) {
      return { ok: false, reason: read.config.at(["inputs"], '"inputs" must be an array') };
    }
    return readServers(read.config, ["servers"], shapeFor(value));
  },
  async rewire(text: string, _context: HostContext, launches: ReadonlyMap<string, HostLaunch>) {
    const { parse } = await import("npm:jsonc-parser@3.3.1");
    const value = parse(text, [], { allowTrailingComma: true });
    return rewireServers(text, ["servers"], shapeFor(value), launches, value);
  },
};
