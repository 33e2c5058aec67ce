/**
 * Helpers for the worker pool's tests: a NATS server with JetStream on loopback (skipped where `nats-server` is
 * missing, unless TOOLGATE_REQUIRE_NATS=1), workers as real `toolgate worker` processes, and in-process callers.
 *
 * @module
 */
import { join } from "node:path";
import type { Manifest } from "../../src/manifest/manifest_types.ts";
import { parsePoolUrl, type PoolAddress } from "../../src/pool/address.ts";
import { PoolClient } from "../../src/pool/client.ts";
import { importPoolKey, type PoolSigningKey } from "../../src/pool/signing.ts";
import { baseEnv, BIN } from "../executor_helpers.ts";
import { denoDir, REPO } from "../support.ts";
import { launcherArgs } from "../support.ts";
import { type Facility, findHostProgram, requires } from "../requires.ts";

/** `nats-server`, on PATH or where Debian puts it (/usr/sbin, which a user's PATH lacks). */
export const NATS_SERVER: string | undefined = findHostProgram("nats-server");

let ignore = false;
let problem: unknown;
try {
  ignore = requires(
    "nats",
    NATS_SERVER === undefined ? "nats-server is not installed (apt-get install nats-server)" : undefined,
    "the worker pool tests",
  );
} catch (error) {
  problem = error;
}

/**
 * A test that needs a NATS server (and `also`, another facility, `missing` as {@linkcode requires} takes it):
 * ignored with a printed reason without them, failed instead on CI.
 */
export function poolTest(
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
  also?: { readonly facility: Facility; readonly missing: string | undefined },
): void {
  Deno.test({
    name,
    ignore: ignore || (also !== undefined && requires(also.facility, also.missing, name)),
    fn: async (t) => {
      if (problem !== undefined) throw problem;
      await fn(t);
    },
  });
}

/** The pool key of the tests' callers and workers (at least 32 bytes, as any pool key). */
export const POOL_KEY_TEXT = "tests-pool-key-0123456789abcdefghijklmnopqrstuvwxyz";

/** {@linkcode POOL_KEY_TEXT} as the HMAC key callers and workers sign with. */
export const POOL_KEY: PoolSigningKey = await importPoolKey(POOL_KEY_TEXT, "the tests' pool key");

const keyDir = await Deno.makeTempDir({ prefix: "toolgate_pool_key_" });
globalThis.addEventListener("unload", () => Deno.removeSync(keyDir, { recursive: true }));

/** A file holding {@linkcode POOL_KEY_TEXT}, mode 0600, as a user keeps one. */
export const POOL_KEY_FILE: string = join(keyDir, "pool.key");
await Deno.writeTextFile(POOL_KEY_FILE, POOL_KEY_TEXT + "\n", { mode: 0o600 });

/** The variable that gives a caller or worker process the tests' pool key. */
export const POOL_ENV: Readonly<Record<string, string>> = { TOOLGATE_POOL_KEY_FILE: POOL_KEY_FILE };

/** A NATS server of a test's own, on a free loopback port, stopped and its store removed at the end of the scope. */
export interface NatsServer extends AsyncDisposable {
  readonly url: string;
  readonly address: PoolAddress;
  /** The nats-server process (its CPU time, in the load bench). */
  readonly pid: number;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Starts `nats-server -js` on loopback (with `serverArgs`, e.g. `--auth TOKEN`) and waits until it takes connections. */
export async function natsServer(serverArgs: readonly string[] = []): Promise<NatsServer> {
  const store = await Deno.makeTempDir({ prefix: "toolgate_nats_" });
  const port = freePort();
  const child = new Deno.Command(NATS_SERVER!, {
    args: ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store, ...serverArgs],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const deadline = performance.now() + 10_000;
  while (true) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      break;
    } catch {
      if (performance.now() > deadline) throw new Error("nats-server did not start within 10 s");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    address: parsePoolUrl(url) as PoolAddress,
    pid: child.pid,
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.status;
      await Deno.remove(store, { recursive: true });
    },
  };
}

/** A `toolgate worker` process. */
export interface WorkerProcess extends AsyncDisposable {
  readonly name: string;
  readonly pid: number;
  /** Its workspace: the tools it runs write here. */
  readonly cwd: string;
  /** What it printed on stderr so far. */
  stderr(): string;
  /** SIGKILL: a worker that dies mid-call. */
  kill(): Promise<void>;
  /** SIGTERM, and its exit code. */
  stop(): Promise<number>;
}

/** The CLI's flags for a worker: broad file grants as the other CLI tests use, and the loopback network. */
const WORKER_FLAGS = [
  "run",
  "--no-prompt",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-run",
  "--allow-net=127.0.0.1",
];

/** How a test worker starts besides its pool, manifest, folder and name. */
export interface WorkerStart {
  /** Through the `toolgate` launcher (the least permission set), as a user runs it. */
  readonly launcher?: boolean;
  /** Variables added to its environment (over {@linkcode POOL_ENV}, which gives it the tests' pool key). */
  readonly env?: Record<string, string>;
  /** Start it with `--insecure` (default: true, the tests' servers take anyone but where a test says). */
  readonly insecure?: boolean;
  /** More options after the others (`--console 0`; `--sandbox require` over the tests' `off`). */
  readonly args?: readonly string[];
  /** Its audit folder (default: no audit log). */
  readonly auditDir?: string;
  /** The calls it runs at once (default: 1; `null`: the worker's own default, one per CPU). */
  readonly concurrency?: number | null;
}

/** Starts `toolgate worker --nats URL --tools MANIFEST ...` in `cwd` and waits until it serves. */
export async function startWorker(
  url: string,
  manifestPath: string,
  cwd: string,
  name: string,
  start: WorkerStart = {},
): Promise<WorkerProcess> {
  const entry = start.launcher
    ? launcherArgs([])
    : [...WORKER_FLAGS, "--config", join(REPO, "deno.json"), join(REPO, "src/main.ts")];
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      ...entry,
      "worker",
      "--nats",
      url,
      "--tools",
      manifestPath,
      "--allow-absolute-commands",
      "--sandbox",
      "off",
      ...(start.auditDir === undefined ? ["--no-audit"] : ["--audit-dir", start.auditDir]),
      "--name",
      name,
      ...(start.concurrency === null ? [] : ["--concurrency", String(start.concurrency ?? 1)]),
      ...(start.insecure ?? true ? ["--insecure"] : []),
      ...start.args ?? [],
    ],
    cwd,
    // This user's Deno cache even under a HOME of the test's own (an empty one would download the NATS client).
    env: { NO_COLOR: "1", DENO_DIR: denoDir(), ...POOL_ENV, ...start.env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) text += chunk;
  })();
  const deadline = performance.now() + 20_000;
  while (!text.includes("serving the")) {
    if (performance.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`worker ${name} did not start: ${text}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  let ended = false;
  const status = child.status.then((s) => {
    ended = true;
    return s;
  });
  return {
    name,
    pid: child.pid,
    cwd,
    stderr: () => text,
    async kill() {
      // Through the launcher, SIGKILL would end the launcher alone: these tests kill direct workers only.
      if (start.launcher) throw new Error("kill() needs a worker started without the launcher");
      if (!ended) child.kill("SIGKILL");
      await status;
      await reading;
    },
    async stop() {
      if (!ended) child.kill("SIGTERM");
      const { code } = await status;
      await reading;
      return code;
    },
    async [Symbol.asyncDispose]() {
      // The launcher passes SIGTERM on to the worker it started; a direct worker is simply killed.
      if (!ended) child.kill(start.launcher ? "SIGTERM" : "SIGKILL");
      await status;
      await reading;
    },
  };
}

/** A manifest file of `tools` in `dir`, commands absolute (the fixture tools): for workers and callers alike. */
export async function writePoolManifest(
  dir: string,
  tools: readonly Record<string, unknown>[],
): Promise<string> {
  const path = join(dir, "tools.json");
  await Deno.writeTextFile(path, JSON.stringify({ tools }, null, 2));
  return path;
}

/** The fixture tools of the pool's tests. */
export const POOL_TOOLS: readonly Record<string, unknown>[] = [
  {
    name: "echo",
    readOnly: true,
    concurrent: true,
    schema: {
      type: "object",
      properties: { n: { type: "integer" }, text: { type: "string" } },
      additionalProperties: false,
    },
    command: [join(BIN, "echo_stdin")],
  },
  { name: "fail", command: [join(BIN, "respond"), "", '{"error":"boom","hint":"try less"}', "1"] },
  { name: "nap", readOnly: true, command: [join(BIN, "nap"), "30"] },
  { name: "slow_read", readOnly: true, command: [join(BIN, "mark_nap"), "3"] },
  { name: "slow_write", command: [join(BIN, "mark_nap"), "3"] },
  // Still running while a loaded machine starts a second worker and kills the first (seconds, under load).
  { name: "long_write", command: [join(BIN, "mark_nap"), "30"] },
  { name: "hang", command: [join(BIN, "sleeper_pidfile")] },
];

/** A caller's pool connection for `manifest`, closed at the end of the scope. */
export async function poolFor(
  server: NatsServer,
  manifest: Manifest,
): Promise<PoolClient & AsyncDisposable> {
  const pool = await PoolClient.open(server.address, baseEnv(), manifest, POOL_KEY);
  return Object.assign(pool, { [Symbol.asyncDispose]: () => pool.close() });
}

/** The pid lines (`pids SELF CHILD`) a `mark_nap` run appended to `runs` in `dir`. */
export async function runsIn(dir: string): Promise<number[][]> {
  try {
    const text = await Deno.readTextFile(join(dir, "runs"));
    return text.trim().split("\n").filter((line) => line !== "").map((line) =>
      line.split(" ").slice(1).map(Number)
    );
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}
