/**
 * The README's shape (issue 26): the first hour only, at most about 250 lines, in a user's order (what toolgate is,
 * install, a tool of one's own, the agent loop against a local model, an MCP host, the gateway, then links), and
 * the reference in `docs/`, one page per concern, each linked from the README. What each block says is tested by
 * tests/readme_test.ts, which runs every page's fenced blocks.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./support.ts";

const README = Deno.readTextFileSync(join(REPO, "README.md"));

Deno.test("README: the first hour only, at most about 250 lines", () => {
  const lines = README.split("\n").length;
  assert.ok(lines <= 260, `the README has ${lines} lines: move the reference into docs/`);
});

Deno.test("README: its sections come in the order a new user needs them", () => {
  const headings = README.split("\n").filter((line) => line.startsWith("## ")).map((line) => line.slice(3));
  const order = [/^Install/, /^Quickstart/, /agent loop/i, /MCP host/, /MCP servers/, /^What next/];
  let at = -1;
  for (const wanted of order) {
    const found = headings.findIndex((heading, i) => i > at && wanted.test(heading));
    assert.ok(
      found > at,
      `no section ${wanted} after ${headings[at] ?? "the start"}: ${headings.join(" | ")}`,
    );
    at = found;
  }
  // One sentence of what toolgate is, before anything else.
  const intro = README.slice(README.indexOf("\n") + 1, README.indexOf("\n## ")).trim();
  assert.match(intro, /toolgate/i);
});

Deno.test("docs: a page per concern the issue names, each linked from the README", () => {
  const concerns = [
    "manifest",
    "envelopes",
    "confinement",
    "approvals",
    "secrets",
    "agent_loop",
    "mcp",
    "gateway",
    "pool",
    "library",
    "performance",
    "security",
  ];
  for (const concern of concerns) {
    const page = `docs/${concern}.md`;
    assert.ok(Deno.statSync(join(REPO, page)).isFile, `${page} is missing`);
    assert.ok(README.includes(`(${page})`), `the README does not link ${page}`);
  }
});
