/**
 * The shipped tools' `outputSchema`s (tools.json) against the results the tools really return: each tool runs on
 * its usual paths (text and base64, a range past the end, symlinks, a redirect, a program killed by a signal) and
 * every result must match its tool's schema, compiled by the loader's own compiler.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type ToolSpec } from "../../src/manifest/manifest_types.ts";
import { describeAjvErrors, SchemaCompiler } from "../../src/manifest/schema.ts";
import { assertOk, runTool, withWorkspace } from "./helpers.ts";
import { REPO } from "../support.ts";

const loaded = await loadManifest(join(REPO, "tools.json"), { compileSchemas: true });
if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
const manifest = loaded.manifest;
const schemas = new SchemaCompiler();

/** Asserts that `result` matches `tool`'s outputSchema. */
function assertMatches(tool: ToolSpec, result: unknown, what: string): void {
  assert.ok(tool.outputSchema, `${tool.name} declares no outputSchema`);
  const compiled = schemas.compile(tool.outputSchema as Record<string, unknown>);
  assert.ok(compiled.ok, compiled.ok ? "" : compiled.reason);
  assert.ok(
    compiled.validate(result),
    `${what}: ${describeAjvErrors(compiled.validate.errors)}\n${JSON.stringify(result)}`,
  );
}

/** A loopback server for http_fetch: `/` answers hello, `/moved` redirects to `/`. */
function serve(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    if (url.pathname === "/moved") return new Response(null, { status: 302, headers: { location: "/" } });
    return new Response("hello", { headers: { "x-test": "a" } });
  });
}

Deno.test("outputSchema: every shipped tool's results match the outputSchema it declares", async () => {
  const server = serve();
  const exercised = new Set<string>();
  try {
    await withWorkspace(async (w) => {
      await w.write("a.txt", "hello\nworld\n");
      const calls: Array<[string, Record<string, unknown>, Record<string, string>?]> = [
        ["get_time", { timezone: "Europe/Helsinki" }],
        ["fs_read_file", { path: "a.txt" }],
        ["fs_read_file", { path: "a.txt", encoding: "base64", offset: 1, length: 2 }],
        ["fs_read_lines", { path: "a.txt" }],
        ["fs_read_lines", { path: "a.txt", start_line: 100 }],
        ["fs_read_lines", { path: "a.txt", start_line: 1, end_line: 1 }],
        ["fs_list_dir", { path: ".", recursive: true }],
        ["fs_list_dir", { path: ".", max_entries: 1 }],
        ["fs_search", { pattern: "o", max_results: 1 }],
        ["fs_search", { pattern: "nothing here" }],
        ["fs_stat", { path: "a.txt" }],
        ["fs_stat", { path: "in_link" }],
        ["fs_stat", { path: "sub" }],
        ["fs_write_file", { path: "b.txt", content: "x = 1\n" }],
        ["fs_write_file", { path: "b.txt", content: "eCA9IDIK", encoding: "base64" }],
        ["fs_edit", { path: "b.txt", old_string: "x = 2", new_string: "x = 3" }],
        ["fs_edit", { path: "a.txt", start_line: 2, new_string: "there" }],
        ["fs_mkdir", { path: "made/deep", parents: true }],
        ["fs_mkdir", { path: "made" }],
        ["fs_remove", { path: "made", recursive: true }],
        ["fs_remove", { path: "b.txt" }],
        ["http_fetch", { url: `http://127.0.0.1:${server.addr.port}/moved` }, {
          TOOLGATE_FETCH_ALLOW_HOSTS: "127.0.0.1",
        }],
        ["http_fetch", { url: `http://127.0.0.1:${server.addr.port}/`, method: "HEAD", encoding: "base64" }, {
          TOOLGATE_FETCH_ALLOW_HOSTS: "127.0.0.1",
        }],
        ["exec", { argv: ["echo", "hi"] }],
        ["exec", { argv: ["sh", "-c", "kill -KILL $$"] }],
        ["exec", { argv: ["sh", "-c", "printf %0300d 0; exit 3"], max_output_chars: 200 }],
      ];
      for (const [name, args, env] of calls) {
        const tool = manifest.byName.get(name)!;
        const result = assertOk(await runTool(name, args, { cwd: w.ws, env }));
        assertMatches(tool, result, `${name} ${JSON.stringify(args)}`);
        exercised.add(name);
      }
    });
  } finally {
    await server.shutdown();
  }
  // exec's background start and the job tool are answered by toolgate itself: through an executor.
  const workspace = await Deno.realPath(await Deno.makeTempDir());
  const executor = new Executor({
    manifest,
    env: {
      PATH: "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      XDG_STATE_HOME: await Deno.makeTempDir(),
    },
    cwd: workspace,
    auditDir: null,
    sandbox: "off",
  });
  try {
    const started = await executor.call(
      "exec",
      JSON.stringify({ shell: "echo started; sleep 30", background: true }),
    );
    assert.ok(started.ok, JSON.stringify(started));
    assertMatches(manifest.byName.get("exec")!, started.result, "exec background");
    const jobId = (started.result as { job_id: string }).job_id;
    for (const action of ["poll", "kill", "wait"]) {
      const answered = await executor.call("job", JSON.stringify({ action, job_id: jobId }));
      assert.ok(answered.ok, JSON.stringify(answered));
      assertMatches(manifest.byName.get("job")!, answered.result, `job ${action}`);
    }
    exercised.add("job");
  } finally {
    await executor.endJobs();
  }
  assert.deepEqual([...exercised].sort(), manifest.tools.map((tool) => tool.name).sort());
});

Deno.test("outputSchema: the shipped schemas are closed, so a result with a key the tool never returns fails", () => {
  const time = manifest.byName.get("get_time")!;
  const compiled = schemas.compile(time.outputSchema as Record<string, unknown>);
  assert.ok(compiled.ok);
  assert.equal(compiled.validate({ timezone: "UTC", iso8601: "2026-01-01T00:00:00+00:00" }), true);
  assert.equal(
    compiled.validate({ timezone: "UTC", iso8601: "2026-01-01T00:00:00+00:00", zone: "UTC" }),
    false,
  );
  assert.equal(compiled.validate({ timezone: "UTC" }), false, "a missing key fails too");
});
