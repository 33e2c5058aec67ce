/**
 * The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned with its own lock file)
 * against `toolgate serve --http` over this folder's manifest of local programs (shell and Python), once for each
 * revision toolgate speaks (`--requirements 2025-11-25`: sessions; `--requirements 2026-07-28`: stateless
 * requests), each run printing its checks passed and failed. The suite's client sends no token, and toolgate's
 * server requires one: a loopback proxy adds it, and passes everything else (the Origin and Host headers the
 * DNS-rebinding scenario sends included) through unchanged.
 *
 * Each revision's expected-failures file lists what this run does not serve (the resources, prompts and completion
 * of an MCP server, which this manifest has none of: gateway_conformance_test.ts runs those scenarios through one);
 * {@linkcode PENDING} what toolgate does not serve yet. The suite fails the run on any other failure, and on a
 * listed scenario that passes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startHttp, TOKEN } from "../mcp/helpers.ts";
import { tempDir } from "../support.ts";
import { facilityTest } from "../requires.ts";
import { HERE, scenarioResults, suiteArgs, suiteMissing, tokenProxy } from "./suite.ts";

const MANIFEST = join(HERE, "tools.json");

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
  "2026-07-28": {},
};

/** Tools that ask the client's model: the suite's client answers no approval form, so the operator allows them. */
const SAMPLING_TOOLS = [
  "test_sampling",
  "test_input_required_result_sampling",
  "test_input_required_result_multiple_inputs",
  "test_input_required_result_capabilities",
];

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
