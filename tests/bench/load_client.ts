/**
 * The load bench's and the load test's own MCP client and server handle: a lean Streamable HTTP client (one
 * `fetch` per request, no SDK, so that the load it adds is little and the same for every variant), `toolgate
 * serve --http` started as the launcher starts it (the least permission set it plans, from the project's folder),
 * its resident memory, and a driver that runs N sessions of M calls each, one call in flight per session.
 *
 * Not here: the floors and the figures (load_bench.ts), the assertions (tests/mcp/load_test.ts).
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { planLaunch } from "../../src/launcher/launch_plan.ts";
import { toFlags } from "../../src/launcher/own_grants.ts";
import { fromFileUrl } from "../../src/base/paths.ts";

/** toolgate's checkout. */
export const REPO: string = fromFileUrl(new URL("../../", import.meta.url)).replace(/\/$/, "");
/** The protocol revision the client asks for in a session. */
const PROTOCOL = "2025-11-25";
/** The stateless revision ({@linkcode StatelessCaller}). */
const STATELESS = "2026-07-28";

/** One call's outcome: its time, and what went wrong (an HTTP status, a JSON-RPC error, an `isError` result). */
export interface CallOutcome {
  readonly ms: number;
  readonly error?: string;
}

/** An open MCP session over Streamable HTTP. */
export class LoadSession {
  #next = 1;
  private constructor(
    private readonly url: URL,
    private readonly token: string,
    /** The session id the server gave. */
    readonly id: string,
  ) {}

  /** Opens a session: `initialize`, then `notifications/initialized`. */
  static async open(url: URL, token: string): Promise<LoadSession> {
    const opened = await post(url, token, undefined, {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: PROTOCOL,
        capabilities: {},
        clientInfo: { name: "toolgate-load", version: "1" },
      },
    });
    const id = opened.headers.get("mcp-session-id");
    const reply = await answer(opened, 0);
    if (id === null || reply.error !== undefined) {
      throw new Error(`initialize failed: ${opened.status} ${JSON.stringify(reply)}`);
    }
    const session = new LoadSession(url, token, id);
    const noted = await post(url, token, id, { jsonrpc: "2.0", method: "notifications/initialized" });
    await noted.body?.cancel();
    return session;
  }

  /** Calls `name` with `args`; resolves with the whole JSON-RPC reply. */
  async request(
    method: string,
    params: unknown,
  ): Promise<{ result?: Record<string, unknown>; error?: unknown }> {
    const id = this.#next++;
    const response = await post(this.url, this.token, this.id, { jsonrpc: "2.0", id, method, params });
    if (!response.ok) {
      await response.body?.cancel();
      return { error: `HTTP ${response.status}` };
    }
    return answer(response, id);
  }

  /** Calls tool `name`, timed; an error of any kind is the outcome's `error`. */
  async call(name: string, args: Record<string, unknown>): Promise<CallOutcome> {
    const started = performance.now();
    const reply = await this.request("tools/call", { name, arguments: args });
    const ms = performance.now() - started;
    if (reply.error !== undefined) return { ms, error: JSON.stringify(reply.error) };
    if (reply.result?.isError) return { ms, error: JSON.stringify(reply.result).slice(0, 300) };
    return { ms };
  }

  /** The raw response of a `tools/call`, its body unread (a client that stops reading). */
  startCall(name: string, args: Record<string, unknown>): Promise<Response> {
    const id = this.#next++;
    return post(this.url, this.token, this.id, {
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name, arguments: args },
    });
  }

  /** Ends the session (HTTP DELETE). */
  async close(): Promise<void> {
    const response = await fetch(this.url, { method: "DELETE", headers: headers(this.token, this.id) });
    await response.body?.cancel();
  }
}

/**
 * A caller of the stateless revision (2026-07-28): no session; each call one POST of its own, its version in
 * `_meta` and its standard headers (`Mcp-Method`, `Mcp-Name`) beside it. Answers as {@linkcode LoadSession} does.
 */
export class StatelessCaller {
  #next = 1;
  /** `name`: its client's name (each caller is kept apart by it, as distinct agents are). */
  constructor(private readonly url: URL, private readonly token: string, private readonly name: string) {}

  /** Calls tool `name`, timed; an error of any kind is the outcome's `error`. */
  async call(name: string, args: Record<string, unknown>): Promise<CallOutcome> {
    const id = this.#next++;
    const started = performance.now();
    const response = await fetch(this.url, {
      method: "POST",
      headers: {
        ...headers(this.token, undefined),
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": name,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: {
          name,
          arguments: args,
          _meta: {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientInfo": { name: this.name, version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    });
    const reply = await answer(response, id);
    const ms = performance.now() - started;
    if (reply.error !== undefined) return { ms, error: JSON.stringify(reply.error) };
    if (reply.result?.isError) return { ms, error: JSON.stringify(reply.result).slice(0, 300) };
    return { ms };
  }

  /** Nothing to end: there is no session. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function headers(token: string, session: string | undefined): Record<string, string> {
  return {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL,
    ...(session === undefined ? {} : { "mcp-session-id": session }),
  };
}

function post(url: URL, token: string, session: string | undefined, message: unknown): Promise<Response> {
  return fetch(url, { method: "POST", headers: headers(token, session), body: JSON.stringify(message) });
}

/** The JSON-RPC reply with `id` in a response (JSON, or an SSE stream read to its end). */
async function answer(
  response: Response,
  id: number,
): Promise<{ result?: Record<string, unknown>; error?: unknown }> {
  const text = await response.text();
  if (!response.ok) return { error: `HTTP ${response.status}: ${text.slice(0, 200)}` };
  const messages = (response.headers.get("content-type") ?? "").includes("text/event-stream")
    ? text.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim())
      .filter((data) => data !== "").map((data) => JSON.parse(data))
    : [JSON.parse(text)];
  const reply = messages.find((message) => message?.id === id);
  return reply ?? { error: `no reply to ${id} in ${text.slice(0, 200)}` };
}

/** What N sessions of M calls gave: every call's outcome, and the wall time of the whole. */
export interface LoadRun {
  readonly outcomes: CallOutcome[];
  readonly wallMs: number;
  /** Sessions that got an answer to every call. */
  readonly answered: number;
}

/**
 * Opens `sessions` sessions, then (timed from here) each makes `calls` calls one after the other, `pick(session,
 * i)` naming each; closes them all. `stateless`: callers of the 2026-07-28 revision instead, one request each.
 */
export async function drive(
  url: URL,
  token: string,
  sessions: number,
  calls: number,
  pick: (session: number, i: number) => { name: string; args: Record<string, unknown> },
  stateless = false,
): Promise<LoadRun> {
  const open: (LoadSession | StatelessCaller)[] = await Promise.all(
    Array.from(
      { length: sessions },
      (_, i) =>
        stateless ? new StatelessCaller(url, token, `toolgate-load-${i}`) : LoadSession.open(url, token),
    ),
  );
  const outcomes: CallOutcome[] = [];
  let answered = 0;
  const started = performance.now();
  await Promise.all(open.map(async (session, s) => {
    let all = true;
    for (let i = 0; i < calls; i++) {
      const { name, args } = pick(s, i);
      const outcome = await session.call(name, args).catch((error) => ({ ms: 0, error: String(error) }));
      outcomes.push(outcome);
      if (outcome.error !== undefined) all = false;
    }
    if (all) answered++;
  }));
  const wallMs = performance.now() - started;
  await Promise.all(open.map((session) => session.close()));
  return { outcomes, wallMs, answered };
}

/** A `toolgate serve --http` process. */
export interface Served extends AsyncDisposable {
  readonly url: URL;
  readonly pid: number;
  readonly stderr: () => string;
}

/**
 * Starts `toolgate serve --http 0 ARGS` in `cwd` as the launcher would (the permission set it plans for this
 * command line, toolgate's main entry), with `env` as the whole environment and the bearer token in
 * TOOLGATE_MCP_TOKEN; `denoFlags` go before the entry (e.g. `--cpu-prof`); `code` is the checkout whose main entry
 * runs (another one: a before-and-after comparison in one run).
 */
export async function startServe(
  cwd: string,
  env: Record<string, string>,
  token: string,
  args: readonly string[],
  denoFlags: readonly string[] = [],
  code: string = REPO,
): Promise<Served> {
  const argv = ["serve", "--http", "0", ...args];
  const whole = { ...env, TOOLGATE_MCP_TOKEN: token };
  // Another checkout's own plan: what it grants (its session starter, named for its source) may differ.
  const plan = code === REPO ? await planLaunch(argv, whole, cwd) : await (await import(
    pathToFileURL(join(code, "src", "launcher", "launch_plan.ts")).href
  ) as typeof import("../../src/launcher/launch_plan.ts")).planLaunch(argv, whole, cwd);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      // Another checkout reads its own code.
      ...toFlags(code === REPO ? plan.set : { ...plan.set, read: [...plan.set.read, code] }),
      ...denoFlags,
      "--config",
      join(code, "deno.json"),
      join(code, "src", "main.ts"),
      ...argv,
    ],
    cwd,
    clearEnv: true,
    // As the launcher does: the whole environment, and what the plan adds.
    env: { ...whole, ...plan.env, INIT_CWD: "" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const listening = Promise.withResolvers<URL>();
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) listening.resolve(new URL(match[1]));
    }
    listening.reject(new Error(`serve stopped before listening:\n${stderr}`));
  })();
  const timer = setTimeout(
    () => listening.reject(new Error(`serve: no address in 60 s:\n${stderr}`)),
    60_000,
  );
  let url: URL;
  try {
    url = await listening.promise;
  } catch (error) {
    child.kill("SIGKILL");
    await child.status;
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    url,
    pid: child.pid,
    stderr: () => stderr,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Gone already.
      }
      const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await child.status;
      clearTimeout(killer);
      await reading.catch(() => {});
    },
  };
}

/** A file of /proc, read by `cat` (Deno lets only `--allow-all` read `/proc`). */
async function procFile(pid: number, name: string): Promise<string> {
  const out = await new Deno.Command("cat", {
    args: [`/proc/${pid}/${name}`],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  if (!out.success) throw new Error(`cannot read /proc/${pid}/${name}`);
  return new TextDecoder().decode(out.stdout);
}

/** The pids under `pid` whose command is `comm` (each task's `children` file under /proc, followed down). */
export async function descendantsNamed(pid: number, comm: string): Promise<number[]> {
  const found: number[] = [];
  const walk = async (at: number) => {
    const out = await new Deno.Command("sh", {
      args: ["-c", `cat /proc/${at}/task/*/children`],
      stdout: "piped",
      stderr: "null",
    }).output();
    for (const child of new TextDecoder().decode(out.stdout).split(/\s+/).filter(Boolean).map(Number)) {
      if ((await procFile(child, "comm").catch(() => "")).trim() === comm) found.push(child);
      await walk(child);
    }
  };
  await walk(pid);
  return found;
}

/** A process's resident memory in MiB: `VmRSS` of /proc/PID/status. */
export async function residentMiB(pid: number): Promise<number> {
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(await procFile(pid, "status"))?.[1]);
  if (!Number.isFinite(kib)) throw new Error(`/proc/${pid}/status tells no resident memory`);
  return kib / 1024;
}

/** The CPU time a process used so far, ms: its own, and that of its children it waited for (the tools it ran). */
export interface CpuTime {
  readonly self: number;
  readonly children: number;
}

/** The clock ticks per second of /proc/PID/stat (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

/** A process's {@linkcode CpuTime}, from /proc/PID/stat (utime, stime, cutime, cstime). */
export async function cpuTime(pid: number): Promise<CpuTime> {
  const text = await procFile(pid, "stat");
  // The fields after the command's name (which may hold spaces), from the state on.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ").map(Number);
  const ms = (ticks: number) => ticks * 1000 / TICKS_PER_S;
  return { self: ms(fields[11] + fields[12]), children: ms(fields[13] + fields[14]) };
}

/** The lines of every audit file under `dir` (`*.log`, recursively). */
export async function auditLines(dir: string): Promise<number> {
  let count = 0;
  const walk = async (folder: string) => {
    for await (const entry of Deno.readDir(folder)) {
      const path = join(folder, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".log")) {
        const text = await Deno.readTextFile(path);
        count += text.split("\n").filter((line) => line.trim() !== "").length;
      }
    }
  };
  try {
    await walk(dir);
  } catch (error) {
    // A folder nothing wrote to yet (a worker that took no call): no lines.
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return count;
}
