// Start-up pays only for what a command uses: the modules that load before any command runs (what `src/main.ts`
// and the launcher import statically, `call` included) hold none of the heavy ones. The agent loop, the MCP
// server and SDK, the JSON Schema library and the lint load with `await import` when their command needs them.
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./support.ts";

interface Dependency {
  readonly code?: { readonly specifier: string };
  readonly isDynamic?: boolean;
}
interface ModuleInfo {
  readonly specifier: string;
  readonly dependencies?: readonly Dependency[];
}

/** Every module `entry` loads before its first line runs: its static imports, followed all the way down. */
async function staticGraph(entry: string): Promise<Set<string>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", join(REPO, "deno.json"), entry],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const info = JSON.parse(new TextDecoder().decode(output.stdout));
  const modules = new Map<string, ModuleInfo>(info.modules.map((m: ModuleInfo) => [m.specifier, m]));
  const seen = new Set<string>();
  const pending = [...info.roots as string[]];
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      if (!dependency.isDynamic && dependency.code) pending.push(dependency.code.specifier);
    }
  }
  return seen;
}

/**
 * What must never load at start: the npm packages (an npm import shows as `npm:`), Node's built-ins, the agent
 * loop and its chat
 * client, the MCP server, the lint, the schema engine. (The light option tables beside them may load: `--help`
 * prints them.)
 */
const HEAVY = [
  /^npm:/,
  // The first Node built-in a process loads costs it about 7 ms (src/base/paths.ts stands in for node:path).
  /^node:/,
  /\/src\/agent\/(loop|http|sse|messages|transcript)\.ts$/,
  /\/src\/mcp\/(server|http|stdio)\.ts$/,
  /\/src\/manifest\/lint\.ts$/,
  /\/src\/manifest\/schema_engine\.ts$/,
  // The OpenTelemetry SDK's adapter: loaded by openTracing only when the OTEL variables name an endpoint.
  /\/src\/run\/otel_exporter\.ts$/,
];

for (const entry of ["src/main.ts", "src/launch.ts"]) {
  Deno.test(`start-up: ${entry} loads no heavy module before a command needs it`, async () => {
    const graph = await staticGraph(join(REPO, entry));
    assert.ok(graph.size > 5, `the graph was read (${graph.size} modules)`);
    const expected = entry.endsWith("main.ts") ? "/src/commands/call.ts" : "/src/launcher/launch_plan.ts";
    assert.ok([...graph].some((m) => m.endsWith(expected)), `${expected} is among what loads`);
    const heavy = [...graph].filter((m) => HEAVY.some((pattern) => pattern.test(m)));
    assert.deepEqual(heavy, []);
  });
}

Deno.test("start-up: the test above sees a heavy module when one is imported statically", async () => {
  // serve's own module imports the MCP SDK statically: the same walk must find it there.
  const graph = await staticGraph(join(REPO, "src", "mcp", "server.ts"));
  assert.ok([...graph].some((m) => m.startsWith("npm:") && m.includes("modelcontextprotocol")));
  // The stdio transport imports node:process: a Node built-in shows too.
  assert.ok([...await staticGraph(join(REPO, "src", "mcp", "stdio.ts"))].some((m) => m.startsWith("node:")));
});

Deno.test("serve loads the web console only with --console: no module of src/console is a static import of serve", async () => {
  const graph = await staticGraph(join(REPO, "src", "commands", "serve_mcp.ts"));
  assert.ok([...graph].some((m) => m.endsWith("/src/mcp/server.ts")), "the walk reached the MCP server");
  assert.deepEqual([...graph].filter((m) => m.includes("/src/console/")), []);
  // The walk finds the console where it is imported statically.
  assert.ok(
    [...await staticGraph(join(REPO, "src", "console", "start.ts"))].some((m) => m.endsWith("/http.ts")),
  );
});

Deno.test("run and worker load the web console only with --console: no module of src/console is a static import of either", async () => {
  for (
    const [entry, reached] of [["run_agent.ts", "/src/agent/loop.ts"], [
      "serve_worker.ts",
      "/src/pool/worker.ts",
    ]]
  ) {
    const graph = await staticGraph(join(REPO, "src", "commands", entry));
    assert.ok([...graph].some((m) => m.endsWith(reached)), `the walk of ${entry} reached ${reached}`);
    assert.deepEqual([...graph].filter((m) => m.includes("/src/console/")), [], entry);
  }
});

Deno.test("traces: the OpenTelemetry SDK is no static import of the executor, of a command, or of the tracing seam", async () => {
  for (const entry of ["src/run/executor.ts", "src/commands/executor_options.ts", "src/run/tracing.ts"]) {
    const graph = await staticGraph(join(REPO, entry));
    assert.deepEqual(
      [...graph].filter((m) => m.includes("opentelemetry") || m.endsWith("/otel_exporter.ts")),
      [],
    );
  }
  // The walk finds the SDK where it is imported statically.
  const adapter = await staticGraph(join(REPO, "src", "run", "otel_exporter.ts"));
  assert.ok([...adapter].some((m) => m.startsWith("npm:") && m.includes("@opentelemetry/sdk-trace")));
});

/**
 * What a plain call (no hosts, no credentials, no question, no terminal) never runs: each
 * loads where it is used, so no command's start reads it.
 */
const ON_USE = [
  "src/sandbox/egress_proxy.ts",
  "src/sandbox/plain_http.ts",
  "src/sandbox/run_ca.ts",
  "src/launcher/launch_plan.ts",
  "src/policy/approval_prompt.ts",
  "src/ui/terminal_form.ts",
  "src/run/tool_questions.ts",
  "src/manifest/tool_protocol.ts",
];

Deno.test("start-up: a plain call loads no egress proxy, run CA, launch planner, approval prompt, form, question desk or toolgate/1 channel", async () => {
  // A call's code: what main loads at start, and the executor it loads for the call.
  const executor = await staticGraph(join(REPO, "src", "run", "executor.ts"));
  assert.ok(
    [...executor].some((m) => m.endsWith("/src/sandbox/tool_launch.ts")),
    "the walk reached the launcher",
  );
  const graph = new Set([...await staticGraph(join(REPO, "src", "main.ts")), ...executor]);
  assert.deepEqual(ON_USE.filter((module) => graph.has(`file://${join(REPO, module)}`)), []);
  // Each is there to be found: a moved module must not pass silently.
  for (const module of ON_USE) await Deno.stat(join(REPO, module));
});

Deno.test("start-up: each heavy pattern for src/ names a module that exists (a moved module must not pass silently)", async () => {
  const files: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else files.push("file://" + path);
    }
  };
  await walk(join(REPO, "src"));
  for (const pattern of HEAVY.filter((p) => p.source.includes("src"))) {
    assert.ok(files.some((file) => pattern.test(file)), `${pattern} matches no file of src/`);
  }
});
