/**
 * What the conformance runs share: the official MCP conformance suite (npm `@modelcontextprotocol/conformance`,
 * pinned with this folder's lock file) run through `deno`, why it cannot run here, a loopback proxy that adds
 * toolgate's bearer token to the suite's requests, and each scenario's result from the suite's output folder.
 *
 * Not here: the runs themselves (conformance_test.ts over toolgate's own manifest, gateway_conformance_test.ts
 * through an upstream server).
 *
 * @module
 */
import { join } from "node:path";
import { TOKEN } from "../mcp/helpers.ts";
import { REPO } from "../support.ts";

/** The suite's version; its lock file pins every package under it. */
export const SUITE = "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12";
/** This folder. */
export const HERE: string = join(REPO, "tests", "conformance");
const LOCK = join(HERE, "deno.lock");

/** The suite run through `deno` (it needs Node 22's fs.globSync, which Deno has), outside toolgate's config. */
export function suiteArgs(args: readonly string[], cachedOnly: boolean): string[] {
  return [
    "run",
    "--no-config",
    `--lock=${LOCK}`,
    "--frozen",
    ...(cachedOnly ? ["--cached-only"] : []),
    "-A",
    SUITE,
    ...args,
  ];
}

/** Why the suite cannot run here (it is not in Deno's cache, and the registry cannot be reached), or undefined. */
export async function suiteMissing(): Promise<string | undefined> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: suiteArgs(["--version"], false),
    stdout: "piped",
    stderr: "piped",
  }).output();
  return out.success ? undefined : new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
}

/** A loopback proxy to `target` that adds the bearer token, streaming both ways (SSE answers included). */
export function tokenProxy(target: URL): { url: URL; close: () => Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const headers = new Headers(request.headers);
    headers.set("authorization", `Bearer ${TOKEN}`);
    const body = request.method === "GET" || request.method === "HEAD"
      ? undefined
      : await request.arrayBuffer();
    const upstream = await fetch(new URL(new URL(request.url).pathname, target), {
      method: request.method,
      headers,
      body,
      redirect: "manual",
    });
    return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
  });
  const port = (server.addr as Deno.NetAddr).port;
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), close: () => server.shutdown() };
}

/** One scenario's checks, as the suite wrote them. */
export interface ScenarioChecks {
  /** No FAILURE and no WARNING (which the suite counts as a failure). */
  readonly ok: boolean;
  /** Its checks that passed. */
  readonly passed: number;
  /** Its checks that failed (or warned). */
  readonly failed: number;
}

/** Each scenario's checks from the suite's output folder, by scenario. */
export async function scenarioChecks(dir: string): Promise<Map<string, ScenarioChecks>> {
  const results = new Map<string, ScenarioChecks>();
  for await (const entry of Deno.readDir(dir)) {
    const match = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(entry.name);
    if (!entry.isDirectory || !match) continue;
    const checks = JSON.parse(await Deno.readTextFile(join(dir, entry.name, "checks.json"))) as {
      status: string;
    }[];
    const failed = checks.filter((check) => check.status === "FAILURE" || check.status === "WARNING").length;
    const passed = checks.filter((check) => check.status === "SUCCESS").length;
    results.set(match[1], { ok: failed === 0, passed, failed });
  }
  return results;
}

/** Each scenario's result from the suite's output folder: does it pass? */
export async function scenarioResults(dir: string): Promise<Map<string, boolean>> {
  return new Map([...await scenarioChecks(dir)].map(([name, checks]) => [name, checks.ok]));
}
