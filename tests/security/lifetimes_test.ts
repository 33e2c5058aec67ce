/**
 * Nothing outlives its owner (issue 38): a tool's tree ends through what holds every process of it, its cgroup
 * (or, confined without one, its pid namespace), never only through the process group toolgate started it in,
 * which bwrap's `--new-session` and a tool's own `setsid` leave. Background jobs of an MCP session whose session is
 * deleted, again and again, then `serve` stopped; `serve` killed with SIGKILL; a foreground call that times out;
 * an upstream MCP server ended: no process of them is left.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { denoDir, REPO } from "../support.ts";
import { pgrep, uniqueSleep, until, within } from "../processes.ts";
import { killLeftovers, scratch } from "../executor_helpers.ts";
import { project } from "../gateway_support.ts";
import { connectHttp, envelopeOf, type HttpServer, serveArgs, spawnHttp, TOKEN } from "../mcp/helpers.ts";
import { confinedTest, hostTest, realTempDir, SUPPORT } from "./helpers.ts";
import { detectCgroups } from "../../src/sandbox/cgroups.ts";
import { ToolLauncher } from "../../src/sandbox/tool_launch.ts";
import { Upstream } from "../../src/gateway/upstream.ts";
import { loadManifest, validateManifest } from "../../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { Executor } from "../../src/run/executor.ts";
import type { SandboxMode } from "../../src/sandbox/sandbox.ts";

/** The belt's manifest: `exec` (background jobs) and `job`. */
const BELT = join(REPO, "tools.json");

/** Why call cgroups cannot be made here (toolgate needs a writable cgroup folder), or `undefined`. */
const NO_CGROUPS = detectCgroups(Deno.env.toObject()) === undefined
  ? "no cgroup folder toolgate may write here (a delegated cgroup, or root)"
  : undefined;

/** The variable that tells toolgate its own cgroups: one it cannot read makes it run without any. */
const WITHOUT_CGROUPS = { TOOLGATE_CGROUP: "none" };

/**
 * `toolgate serve --http 0 --yes` over the belt in `sandbox` mode, its job logs in a state folder of the test's.
 */
async function serveBelt(
  sandbox: SandboxMode,
  workspace: string,
  state: string,
  env: Record<string, string> = {},
): Promise<HttpServer> {
  const args = serveArgs(["--http", "0", "--yes"], workspace, BELT);
  // serveArgs says `--sandbox off`: this test says which.
  args[args.indexOf("--sandbox") + 1] = sandbox;
  return await spawnHttp(Deno.execPath(), args, { TOOLGATE_MCP_TOKEN: TOKEN, XDG_STATE_HOME: state, ...env });
}

/**
 * The eight jobs of a round: a plain sleep, a sleep beside one that made a session of its own (setsid), one whose
 * grandchild left both its group and its parent, each twice or thrice. Each sleeps `seconds`.
 */
function jobShells(seconds: string): string[] {
  const shapes = [
    `sleep ${seconds}`,
    `sleep ${seconds} & setsid sleep ${seconds} & wait`,
    `(setsid sh -c 'sleep ${seconds} & sleep ${seconds}' &); sleep ${seconds}`,
  ];
  return Array.from({ length: 8 }, (_, i) => shapes[i % shapes.length]);
}

/** How many `sleep SECONDS` each round's eight jobs run once all have started. */
const SLEEPS_PER_ROUND = 3 * 1 + 3 * 2 + 2 * 3;

/**
 * Every process whose command line names `sleep SECONDS`: the sleeps, the shells and bwrap processes around them.
 */
const named = (seconds: string) => pgrep(`sleep ${seconds}`, false);

/**
 * `rounds` times: a session starts eight jobs (every other round waits until all their processes run, the others
 * delete the session while the sandboxes are still being set up), then deletes itself; nothing of a round is left
 * once its DELETE is answered. Then `serve` is stopped (SIGTERM): nothing is left at all.
 */
async function deleteRounds(sandbox: SandboxMode, rounds: number, env: Record<string, string> = {}) {
  await using workspace = await scratch();
  await using state = await scratch();
  const seconds = uniqueSleep(3100);
  const server = await serveBelt(sandbox, workspace.path, state.path, env);
  try {
    for (let round = 0; round < rounds; round++) {
      const session = await connectHttp(server.url, TOKEN);
      for (const shell of jobShells(seconds)) {
        const answer = envelopeOf(
          await session.client.callTool({ name: "exec", arguments: { shell, background: true } }),
        );
        assert.equal(answer.ok, true, JSON.stringify(answer));
      }
      if (round % 2 === 1) {
        await until(
          async () => (await pgrep(`sleep ${seconds}`)).length >= SLEEPS_PER_ROUND,
          `round ${round}: every process of the eight jobs running`,
        );
      }
      await session.transport.terminateSession();
      await session.client.close();
      assert.deepEqual(
        await named(seconds),
        [],
        `round ${round}: a job's process outlived its deleted session`,
      );
    }
    // One more session whose jobs run when serve stops.
    const last = await connectHttp(server.url, TOKEN);
    for (const shell of jobShells(seconds)) {
      const answer = envelopeOf(
        await last.client.callTool({ name: "exec", arguments: { shell, background: true } }),
      );
      assert.equal(answer.ok, true, JSON.stringify(answer));
    }
    await until(
      async () => (await pgrep(`sleep ${seconds}`)).length >= SLEEPS_PER_ROUND,
      "the last jobs running",
    );
    await server.stop();
    assert.deepEqual(await named(seconds), [], "a job's process outlived serve");
  } finally {
    await server.stop();
    killLeftovers(await named(seconds));
  }
}

confinedTest(
  "lifetimes: eight jobs a session, its DELETE fifty times, then serve stopped: no process left (cgroups)",
  async () => {
    assert.equal(NO_CGROUPS, undefined, `this test needs call cgroups: ${NO_CGROUPS}`);
    await deleteRounds("require", 50);
  },
);

confinedTest(
  "lifetimes: eight jobs a session, its DELETE twenty times, then serve stopped: no process left (pid namespace, no cgroups)",
  async () => {
    await deleteRounds("require", 20, WITHOUT_CGROUPS);
  },
);

hostTest(
  "lifetimes: unconfined (--sandbox off) jobs that call setsid end with their deleted session and with serve",
  NO_CGROUPS,
  async () => {
    await deleteRounds("off", 10);
  },
);

/** The sandbox fixture: `escaper` starts a grandchild with setsid, then outlives its one-second budget. */
const SANDBOX_FIXTURE = join(REPO, "tests", "fixtures", "sandbox", "tools.json");

/** How a call is confined in a case of the tests below, and what toolgate is told of its cgroups. */
interface Mode {
  readonly sandbox: SandboxMode;
  readonly env: Record<string, string>;
}

const CONFINED_CGROUPS: Mode = { sandbox: "require", env: {} };
const CONFINED_NAMESPACE: Mode = { sandbox: "require", env: WITHOUT_CGROUPS };
const UNCONFINED: Mode = { sandbox: "off", env: {} };

/**
 * The sleeps of `seconds` still running once a tree's end was reported: looked for at once where a cgroup holds the
 * tree; confined without one, the end is reported at bwrap's exit, and the namespace's init (with what the server
 * left) is killed only as bwrap's death reaches it (docs/limits.md): looked for until they are gone, two seconds
 * at the most.
 */
async function leftAfterEnd(mode: Mode, seconds: string): Promise<number[]> {
  let left = await named(seconds);
  if (mode !== CONFINED_NAMESPACE) return left;
  for (const deadline = performance.now() + 2000; left.length > 0 && performance.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = await named(seconds);
  }
  return left;
}

/** The modes this host can run: confined ones need bubblewrap; an unconfined tree is held only by a cgroup. */
function modesHere(): Mode[] {
  return [
    ...(SUPPORT.ok ? [CONFINED_NAMESPACE, ...(NO_CGROUPS === undefined ? [CONFINED_CGROUPS] : [])] : []),
    ...(NO_CGROUPS === undefined ? [UNCONFINED] : []),
  ];
}

hostTest(
  "lifetimes: a foreground call that times out leaves nothing, its setsid grandchild included (cgroup, pid namespace, unconfined)",
  NO_CGROUPS,
  async () => {
    const loaded = await loadManifest(SANDBOX_FIXTURE);
    assert.ok(loaded.ok);
    for (const mode of modesHere()) {
      const seconds = uniqueSleep(3200);
      const workspace = await realTempDir();
      const executor: Executor = new Executor({
        manifest: loaded.manifest,
        env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root", ...mode.env },
        cwd: workspace,
        auditDir: null,
        auditKey: new Uint8Array(32),
        sandbox: mode.sandbox,
        graceMs: 200,
      });
      try {
        const envelope = await executor.call("escaper", JSON.stringify({ seconds }));
        assert.equal(!envelope.ok && envelope.kind, "timeout", JSON.stringify(envelope));
        // Answered only once the call's tree is gone: no wait here.
        assert.deepEqual(
          await named(seconds),
          [],
          `${JSON.stringify(mode)}: the setsid grandchild outlived its call`,
        );
      } finally {
        killLeftovers(await named(seconds));
        await Deno.remove(workspace, { recursive: true });
      }
    }
  },
);

/**
 * An MCP server (stdio, no SDK: Python's standard library) that starts two grandchildren, a sleep in its own
 * process group and one in a session of its own (setsid), then answers `initialize` and `tools/list`.
 */
const FORKING_SERVER = `
import json, subprocess, sys
seconds = sys.argv[1]
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(["sleep", seconds], **quiet)
subprocess.Popen(["setsid", "sleep", seconds], **quiet)
while True:
    line = sys.stdin.readline()
    if not line:
        break
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "forks", "version": "1.0.0"}}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "noop", "description": "Does nothing.", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
    sys.stdout.flush()
`;

hostTest(
  "lifetimes: an upstream MCP server that forks grandchildren (one with setsid) leaves nothing once ended, even while it starts",
  NO_CGROUPS,
  async () => {
    await loadSchemaEngine();
    for (const mode of modesHere()) {
      const seconds = uniqueSleep(3300);
      const dir = await realTempDir();
      const script = join(dir, "forks.py");
      await Deno.writeTextFile(script, FORKING_SERVER);
      const loaded = validateManifest(
        { tools: [], mcpServers: { forks: { command: "/usr/bin/python3", args: [script, seconds] } } },
        join(dir, "tools.json"),
      );
      assert.ok(loaded.ok, JSON.stringify(loaded));
      const env = { PATH: "/usr/bin:/bin", HOME: dir, ...mode.env };
      const launcher = new ToolLauncher({
        manifest: loaded.manifest,
        env,
        workspace: dir,
        controlPlane: { readOnly: [], hidden: [] },
        sandbox: mode.sandbox,
      });
      const upstream = (graceMs: number) =>
        new Upstream({
          server: loaded.manifest.servers![0],
          launcher,
          env,
          workspace: dir,
          secret: () => undefined,
          graceMs,
        });
      try {
        // Started, its grandchildren running, then ended the way toolgate ends it (stdin closed, SIGTERM, SIGKILL).
        // Every wait here is bounded (`deno test` has none): a close or a start that hangs fails the test.
        const running = upstream(500);
        assert.equal((await within(running.listTools(), 60_000, "the server's tools"))[0].name, "noop");
        await until(async () => (await pgrep(`sleep ${seconds}`)).length === 2, "both grandchildren running");
        assert.equal(await within(running.close(), 60_000, "the running server's end"), undefined);
        assert.deepEqual(
          await leftAfterEnd(mode, seconds),
          [],
          `${JSON.stringify(mode)}: a grandchild outlived its server`,
        );
        // Ended while it is still being started (its sandbox being set up), at once: five times.
        for (let i = 0; i < 5; i++) {
          const starting = upstream(0);
          const listed = starting.listTools().catch(() => undefined);
          await until(() => starting.pid !== undefined, "the server's process started", 10_000);
          // Nothing it could not end (the close says what), and its start refused once it was closed.
          assert.equal(
            await within(starting.close(), 60_000, "the end of a server being started"),
            undefined,
          );
          await within(listed, 10_000, "the refusal of a start that was closed");
          assert.deepEqual(
            await leftAfterEnd(mode, seconds),
            [],
            `${JSON.stringify(mode)}: a server ended while it started left a process`,
          );
        }
      } finally {
        killLeftovers(await named(seconds));
        await Deno.remove(dir, { recursive: true });
      }
    }
  },
);

/** The call cgroups a toolgate of pid `pid` made (or left) here, by folder. */
async function cgroupsOf(pid: number): Promise<string[]> {
  const support = detectCgroups(Deno.env.toObject());
  const bases = [support?.pids, support?.memory].filter((base) => base !== undefined);
  const out = await new Deno.Command("sh", {
    args: [
      "-c",
      'for base in "$@"; do for dir in "$base"/call-$0-*; do [ -d "$dir" ] && echo "$dir"; done; done',
      String(pid),
      ...bases,
    ],
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => line !== "");
}

/**
 * `serve` killed with SIGKILL while eight jobs run (it can end nothing itself): `mode`'s jobs are then ended
 * either by the sandbox (bwrap's parent-death signal ends each pid namespace) or, unconfined, by the next toolgate
 * that makes a call cgroup, which empties and removes what the killed one left. Nothing is left either way.
 */
async function killedServe(mode: Mode): Promise<void> {
  await using workspace = await scratch();
  await using state = await scratch();
  const seconds = uniqueSleep(3400);
  const server = await serveBelt(mode.sandbox, workspace.path, state.path, mode.env);
  let next: HttpServer | undefined;
  try {
    const session = await connectHttp(server.url, TOKEN);
    for (const shell of jobShells(seconds)) {
      const answer = envelopeOf(
        await session.client.callTool({ name: "exec", arguments: { shell, background: true } }),
      );
      assert.equal(answer.ok, true, JSON.stringify(answer));
    }
    await until(
      async () => (await pgrep(`sleep ${seconds}`)).length >= SLEEPS_PER_ROUND,
      "every job running",
    );
    const killed = server.child.pid;
    server.child.kill("SIGKILL");
    await server.stop();
    await session.client.close().catch(() => {});
    if (mode.sandbox !== "off") {
      await until(
        async () => (await named(seconds)).length === 0,
        "the confined jobs ended with toolgate",
        5000,
      );
    } else {
      // Unconfined, nothing ends them with toolgate: the processes stay until a later toolgate reaps their cgroup.
      assert.ok(
        (await named(seconds)).length > 0,
        "an unconfined job ended with a toolgate killed by SIGKILL",
      );
    }
    // The next toolgate's first call with a cgroup ends what the killed one left, and removes its cgroups.
    next = await serveBelt(mode.sandbox, workspace.path, state.path, mode.env);
    await using later = await connectHttp(next.url, TOKEN);
    const answer = envelopeOf(await later.client.callTool({ name: "exec", arguments: { argv: ["true"] } }));
    assert.equal(answer.ok, true, JSON.stringify(answer));
    assert.deepEqual(
      await named(seconds),
      [],
      `${JSON.stringify(mode)}: a job outlived a toolgate killed by SIGKILL`,
    );
    assert.deepEqual(await cgroupsOf(killed), [], "the killed toolgate's call cgroups are left");
  } finally {
    await server.stop();
    await next?.stop();
    killLeftovers(await named(seconds));
  }
}

confinedTest(
  "lifetimes: serve killed with SIGKILL: confined jobs end with it (cgroups left are removed by the next run)",
  async () => {
    assert.equal(NO_CGROUPS, undefined, `this test needs call cgroups: ${NO_CGROUPS}`);
    await killedServe(CONFINED_CGROUPS);
  },
);

hostTest(
  "lifetimes: serve killed with SIGKILL: unconfined jobs are ended by the next toolgate, through the cgroups they were left in",
  NO_CGROUPS,
  async () => {
    await killedServe(UNCONFINED);
  },
);

hostTest(
  "lifetimes: serve stopped (SIGTERM): its gateway server's grandchildren, one with setsid, are gone",
  NO_CGROUPS,
  async () => {
    for (const mode of modesHere()) {
      const seconds = uniqueSleep(3700);
      await using p = await project({});
      const script = join(p.dir.path, "forks.py");
      await Deno.writeTextFile(script, FORKING_SERVER);
      const manifest = join(p.dir.path, "tools.json");
      await Deno.writeTextFile(
        manifest,
        JSON.stringify({
          tools: [],
          mcpServers: { forks: { command: "/usr/bin/python3", args: [script, seconds] } },
        }),
      );
      // Trusting the server starts it (to pin its tools) and ends it: nothing of it is left either.
      const trust = await p.run(["trust"], undefined, { ...mode.env, TOOLGATE_SANDBOX: mode.sandbox });
      const afterTrust = await named(seconds);
      killLeftovers(afterTrust);
      assert.equal(trust.code, 0, trust.stdout + trust.stderr);
      assert.deepEqual(afterTrust, [], `${JSON.stringify(mode)}: a grandchild outlived \`trust\``);
      const args = serveArgs(["--http", "0", "--yes"], p.dir.path, manifest);
      args[args.indexOf("--sandbox") + 1] = mode.sandbox;
      // Its HOME is the project's: Deno's cache stays this user's.
      const server = await spawnHttp(Deno.execPath(), args, {
        TOOLGATE_MCP_TOKEN: TOKEN,
        DENO_DIR: denoDir(),
        ...p.env,
        ...mode.env,
      });
      try {
        await using session = await connectHttp(server.url, TOKEN);
        const { tools } = await session.client.listTools();
        assert.ok(tools.some((tool) => tool.name.includes("noop")), JSON.stringify(tools.map((t) => t.name)));
        await until(async () => (await pgrep(`sleep ${seconds}`)).length === 2, "both grandchildren running");
        await server.stop();
        assert.deepEqual(await named(seconds), [], `${JSON.stringify(mode)}: a grandchild outlived serve`);
      } finally {
        await server.stop();
        killLeftovers(await named(seconds));
      }
    }
  },
);
