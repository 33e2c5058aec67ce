/**
 * The official MCP conformance suite's resources, prompts and completion scenarios through the gateway: `toolgate
 * serve --http --server conf` fronting an upstream MCP server (offers_server.mjs, on the official SDK) that offers
 * the fixtures the scenarios name, started as a user's server is (a manifest's `mcpServers` entry, confined by
 * bubblewrap, its definitions pinned by `toolgate trust`), once for each revision toolgate speaks. Each scenario
 * runs on its own (`--scenario`); the tool scenarios stay on conformance_test.ts's run over toolgate's own
 * manifest. Each revision's run prints its checks passed and failed.
 *
 * {@linkcode PENDING} lists what does not pass through the gateway yet, each with why; a listed scenario that
 * passes fails the run (the suite calls the entry stale).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { MODULES, nodeServersMissing, project, serveProject } from "../gateway_support.ts";
import { facilityTest } from "../requires.ts";
import { HERE, scenarioChecks, suiteArgs, suiteMissing, tokenProxy } from "./suite.ts";

/** The upstream server: the fixtures the scenarios name. */
const SERVER = join(HERE, "offers_server.mjs");

/** The scenarios of each revision that this run takes: what a server offers besides its tools. */
export const GATEWAY_SCENARIOS: Record<string, readonly string[]> = {
  "2025-11-25": [
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "completion-complete",
  ],
  "2026-07-28": [
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "completion-complete",
    "caching",
    "input-required-result-non-tool-request",
  ],
};

/**
 * What does not pass through the gateway yet, by revision (a scenario, or `scenario:check`), each with why. Remove
 * an entry once it passes.
 */
const PENDING: Record<string, Record<string, string>> = {
  "2025-11-25": {},
  "2026-07-28": {},
};

/** At most this many scenarios run at once (each is a suite process of its own, mostly waiting). */
const AT_ONCE = 4;

/** A trusted project whose one MCP server, `conf`, is {@linkcode SERVER}, confined, reading the SDK only. */
async function confProject() {
  const conf = { command: "node", args: [SERVER], permissions: { read: [MODULES, SERVER], net: false } };
  const p = await project({ conf });
  const trust = await p.run(["trust"]);
  assert.equal(trust.code, 0, trust.stderr + trust.stdout);
  return p;
}

/** `run` over `items`, at most `limit` at once. */
async function pooled<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await run(item);
    }),
  );
}

const MISSING = await suiteMissing();
const GATEWAY_MISSING = MISSING === undefined
  ? await nodeServersMissing("gateway_conformance_test")
  : undefined;
for (const [revision, scenarios] of Object.entries(GATEWAY_SCENARIOS)) {
  const name =
    `the MCP conformance suite's ${revision} resources, prompts and completion scenarios pass through the gateway`;
  if (GATEWAY_MISSING !== undefined) {
    // Why was printed (or thrown under TOOLGATE_REQUIRE_GATEWAY=1) by nodeServersMissing, as for every gateway test.
    Deno.test({ name, ignore: GATEWAY_MISSING !== undefined, fn: () => {} });
    continue;
  }
  facilityTest("conformance", MISSING && `the conformance suite cannot be installed here (${MISSING})`, {
    name,
    fn: async () => {
      await using p = await confProject();
      const pending = PENDING[revision];
      const baseline = join(p.state.path, "baseline.yml");
      await Deno.writeTextFile(
        baseline,
        "server:\n" + Object.keys(pending).map((entry) => `  - ${entry}\n`).join(""),
      );
      await using server = await serveProject(p, ["--server", "conf"]);
      const proxy = tokenProxy(server.url);
      const results = join(p.state.path, "results");
      const unexpected: string[] = [];
      try {
        await pooled(scenarios, AT_ONCE, async (scenario) => {
          const listed = Object.keys(pending).some((entry) => entry.split(":")[0] === scenario);
          const out = await new Deno.Command(Deno.execPath(), {
            args: suiteArgs([
              "server",
              // At the revision's wire (--requirements runs a whole set, and takes no --scenario).
              "--spec-version",
              revision,
              "--scenario",
              scenario,
              "--url",
              proxy.url.href,
              ...(listed ? ["--expected-failures", baseline] : []),
              "-o",
              results,
            ], true),
            cwd: p.state.path,
            stdout: "piped",
            stderr: "piped",
          }).output();
          if (!out.success) {
            // What the suite says of the failed checks, without the scenario's description after it.
            const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
            unexpected.push(
              `${scenario}: ${said.split("\n\n").filter((part) => /Failed|Error/.test(part)).join("\n")}`,
            );
          }
        });
      } finally {
        await proxy.close();
      }
      const checks = [...await scenarioChecks(results).catch(() => new Map())];
      const passed = checks.reduce((sum, [, c]) => sum + c.passed, 0);
      const failed = checks.reduce((sum, [, c]) => sum + c.failed, 0);
      const failing = checks.filter(([, c]) => !c.ok).map(([scenario]) => scenario).sort();
      console.log(
        `conformance ${revision} through the gateway: ${passed} checks passed, ${failed} failed; ` +
          `${checks.length - failing.length} of ${checks.length} scenarios pass; not: ${failing.join(", ")}`,
      );
      assert.deepEqual(unexpected, [], `the suite found unexpected results; server:\n${server.stderr()}`);
      assert.equal(checks.length, scenarios.length, "a scenario wrote no results");
    },
  });
}
