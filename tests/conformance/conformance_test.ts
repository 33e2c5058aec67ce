/**
 * The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned with its own lock file)
 * against `toolgate serve --http` over this folder's manifest of local programs (shell and Python), once for each
 * revision toolgate speaks (`--requirements 2025-11-25`: sessions; `--requirements 2026-07-28`: stateless
 * requests), each run printing its checks passed and failed. The suite's client sends no token, and toolgate's
 * server requires one: a loopback proxy adds it, and passes everything else (the Origin and Host headers the
 * DNS-rebinding scenario sends included) through unchanged.
 *
 * Each revision's expected-failures file lists what toolgate deliberately does not serve; {@linkcode PENDING} what
 * it does not serve yet. The suite fails the run on any other failure, and on a listed scenario that passes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startHttp, TOKEN } from "../mcp/helpers.ts";
import { REPO, tempDir } from "../support.ts";
import { facilityTest } from "../requires.ts";

/** The suite's version; its lock file pins every package under it. */
const SUITE = "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12";
const HERE = join(REPO, "tests", "conformance");
const MANIFEST = join(HERE, "tools.json");
const LOCK = join(HERE, "deno.lock");

/** The revisions measured, each with the file of what toolgate deliberately does not serve at it. */
const REVISIONS: Record<string, string> = {
  "2025-11-25": "expected_failures.yml",
  "2026-07-28": "expected_failures_2026-07-28.yml",
};

/**
 * What toolgate does not pass yet, by revision (a scenario, or `scenario:check`), each with why. Remove an entry
 * once it passes (the suite calls a passing entry stale and fails the run).
 */
const PENDING: Record<string, Record<string, string>> = {
  "2025-11-25": {},
  "2026-07-28": {
    "tasks-lifecycle":
      "not scored (an extension): its protocol_error_job must end a task as failed with a protocol error, which " +
      "a toolgate tool cannot cause (a tool's failure is a completed task with isError)",
    "tasks-required-task-error":
      "not scored (an extension): no toolgate tool requires a task (a manifest cannot say so yet): every call " +
      "runs plain for a client without the extension",
  },
};

/** Tools that ask the client's model: the suite's client answers no approval form, so the operator allows them. */
const SAMPLING_TOOLS = [
  "test_sampling",
  "test_input_required_result_sampling",
  "test_input_required_result_multiple_inputs",
  "test_input_required_result_capabilities",
];

/** The suite run through `deno` (it needs Node 22's fs.globSync, which Deno has), outside toolgate's config. */
function suiteArgs(args: readonly string[], cachedOnly: boolean): string[] {
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
async function suiteMissing(): Promise<string | undefined> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: suiteArgs(["--version"], false),
    stdout: "piped",
    stderr: "piped",
  }).output();
  return out.success ? undefined : new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
}

/** A loopback proxy to `target` that adds the bearer token, streaming both ways (SSE answers included). */
function tokenProxy(target: URL): { url: URL; close: () => Promise<void> } {
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

/** Each scenario's checks from the suite's output folder: does it pass (no FAILURE and no WARNING, which the
 * suite counts as a failure)? */
async function scenarioResults(dir: string): Promise<Map<string, boolean>> {
  const results = new Map<string, boolean>();
  for await (const entry of Deno.readDir(dir)) {
    const match = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(entry.name);
    if (!entry.isDirectory || !match) continue;
    const checks = JSON.parse(await Deno.readTextFile(join(dir, entry.name, "checks.json"))) as {
      status: string;
    }[];
    results.set(match[1], checks.every((check) => check.status !== "FAILURE" && check.status !== "WARNING"));
  }
  return results;
}

const MISSING = await suiteMissing();
for (const [revision, expected] of Object.entries(REVISIONS)) {
  facilityTest("conformance", MISSING && `the conformance suite cannot be installed here (${MISSING})`, {
    name:
      `the MCP conformance suite's ${revision} server requirements pass, but for what toolgate does not serve`,
    fn: async () => {
      await using dir = await tempDir();
      const deliberate = await Deno.readTextFile(join(HERE, expected));
      const baseline = join(dir.path, "baseline.yml");
      await Deno.writeTextFile(
        baseline,
        deliberate + Object.keys(PENDING[revision]).map((name) => `  - ${name}\n`).join(""),
      );
      const workspace = join(dir.path, "workspace");
      await Deno.mkdir(workspace);
      // A tool that sends text to the client's model needs the operator's approval (as an egress call does): the
      // suite's client answers no approval form, so the operator allows those tools up front.
      // --sse-poll: a call still running after a second has its stream closed (test_reconnection runs two), and
      // the suite resumes it with Last-Event-ID (server-sse-polling).
      await using server = await startHttp(
        ["--allow-tools", SAMPLING_TOOLS.join(","), "--sse-poll", "1"],
        workspace,
        { TOOLGATE_MCP_TOKEN: TOKEN },
        MANIFEST,
      );
      const proxy = tokenProxy(server.url);
      const results = join(dir.path, "results");
      try {
        const out = await new Deno.Command(Deno.execPath(), {
          args: suiteArgs([
            "server",
            "--requirements",
            revision,
            "--url",
            proxy.url.href,
            "--expected-failures",
            baseline,
            "-o",
            results,
          ], true),
          cwd: dir.path,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
        const scenarios = [...await scenarioResults(results)];
        const failing = scenarios.filter(([, ok]) => !ok).map(([name]) => name).sort();
        // The suite's own total of checks (the one the issue measured), the scenarios it does not score included.
        const total = /Total: (\d+) passed, (\d+) failed/.exec(text);
        console.log(
          `conformance ${revision}: ${total?.[1]} checks passed, ${total?.[2]} failed; ` +
            `${scenarios.length - failing.length} of ${scenarios.length} scenarios pass; not: ${
              failing.join(", ")
            }`,
        );
        assert.ok(out.success, `the suite found unexpected results:\n${text}\nserver:\n${server.stderr()}`);
      } finally {
        await proxy.close();
      }
    },
  });
}
