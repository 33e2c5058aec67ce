/**
 * Shared helpers of the built-in tool tests: run a real `tools/bin/<name>` launcher the way the runner does (JSON
 * on stdin, a scrubbed environment, a workspace as cwd), read its one line of output, and build workspaces with
 * an outside tree and symlinks that point out of them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";

/** The repository root. */

/** What one tool run produced. */
export interface ToolRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@linkcode runTool}. */
export interface RunOptions {
  /** The tool's working directory: the workspace. */
  cwd: string;
  /** Variables added to PATH and HOME. */
  env?: Record<string, string>;
  /** Raw stdin instead of JSON-encoded arguments. */
  rawStdin?: string;
  /** How long the tool may run before it is killed (default 60 s). */
  timeoutMs?: number;
}

/** Runs `tools/bin/<name>` with `args` as JSON on stdin and only PATH, HOME and `options.env` in its environment. */
export async function runTool(name: string, args: unknown, options: RunOptions): Promise<ToolRun> {
  const env: Record<string, string> = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1" };
  const home = Deno.env.get("HOME");
  if (home !== undefined) env.HOME = home;
  const child = new Deno.Command(join(REPO, "tools/bin", name), {
    cwd: options.cwd,
    clearEnv: true,
    env: { ...env, ...options.env },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(options.rawStdin ?? JSON.stringify(args)));
  await writer.close();
  const output = await child.output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}

function oneJsonLine(text: string, what: string): Record<string, unknown> {
  assert.ok(text.endsWith("\n") && !text.slice(0, -1).includes("\n"), `${what} must be one line: ${text}`);
  return JSON.parse(text);
}

/** Asserts a success (exit 0, one JSON line on stdout, nothing on stderr) and returns the result. */
// deno-lint-ignore no-explicit-any
export function assertOk(run: ToolRun): any {
  assert.equal(run.code, 0, `expected success, got exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stderr, "");
  return oneJsonLine(run.stdout, "stdout");
}

/**
 * Asserts a failure (exit 1, nothing on stdout, one failure envelope on stderr) of `kind`, naming `field` when
 * given, and returns the envelope.
 */
export function assertFailure(run: ToolRun, kind: string, field?: string): Record<string, unknown> {
  assert.equal(run.code, 1, `expected failure ${kind}, got exit ${run.code}: ${run.stdout}${run.stderr}`);
  assert.equal(run.stdout, "");
  const envelope = oneJsonLine(run.stderr, "stderr");
  assert.equal(envelope.ok, false);
  assert.equal(envelope.kind, kind, run.stderr);
  assert.equal(typeof envelope.message, "string");
  assert.equal(typeof envelope.retryable, "boolean");
  assert.equal(Object.keys(envelope)[0], "ok", "ok comes first");
  if (field !== undefined) assert.equal(envelope.field, field, run.stderr);
  return envelope;
}

/**
 * A temporary tree: `ws` (the workspace) and `outside` beside it holding `secret.txt`, with escape hatches in the
 * workspace: `out` (a symlink to `outside`), `sub/out` (the same, in the middle of a path), `dangling` (a symlink
 * to a missing file outside) and `in_link` (a symlink to `sub`, inside).
 */
export interface Workspace {
  base: string;
  ws: string;
  outside: string;
  /** Removes the whole tree. */
  cleanup(): Promise<void>;
  /** Writes a file in the workspace, creating its parents. */
  write(rel: string, content: string | Uint8Array): Promise<void>;
  /** Reads a workspace file as text. */
  read(rel: string): Promise<string>;
  /** Lists everything under `outside`, to prove an escape changed nothing. */
  outsideSnapshot(): Promise<string[]>;
}

/** Builds a {@linkcode Workspace}. */
export async function makeWorkspace(): Promise<Workspace> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_tools_" }));
  const ws = join(base, "ws");
  const outside = join(base, "outside");
  await Deno.mkdir(join(ws, "sub"), { recursive: true });
  await Deno.mkdir(join(outside, "dir"), { recursive: true });
  await Deno.writeTextFile(join(outside, "secret.txt"), "secret\n");
  await Deno.writeTextFile(join(outside, "dir", "inner.txt"), "inner\n");
  await Deno.symlink("../outside", join(ws, "out"));
  await Deno.symlink("../../outside", join(ws, "sub", "out"));
  await Deno.symlink("../outside/missing.txt", join(ws, "dangling"));
  await Deno.symlink("sub", join(ws, "in_link"));
  const snapshot = async (dir: string, prefix = ""): Promise<string[]> => {
    const names: string[] = [];
    for await (const entry of Deno.readDir(dir)) {
      const rel = prefix + entry.name;
      const stat = await Deno.lstat(join(dir, entry.name));
      names.push(`${rel}:${stat.size}:${stat.mtime?.getTime()}`);
      if (entry.isDirectory) names.push(...await snapshot(join(dir, entry.name), rel + "/"));
    }
    return names.sort();
  };
  return {
    base,
    ws,
    outside,
    cleanup: () => Deno.remove(base, { recursive: true }),
    async write(rel, content) {
      const path = join(ws, rel);
      await Deno.mkdir(join(path, ".."), { recursive: true });
      if (typeof content === "string") await Deno.writeTextFile(path, content);
      else await Deno.writeFile(path, content);
    },
    read: (rel) => Deno.readTextFile(join(ws, rel)),
    outsideSnapshot: () => snapshot(outside),
  };
}

/** Runs `body` with a fresh workspace, removed afterwards. */
export async function withWorkspace(body: (w: Workspace) => Promise<void>): Promise<void> {
  const workspace = await makeWorkspace();
  try {
    await body(workspace);
  } finally {
    await workspace.cleanup();
  }
}

/**
 * The paths every file tool must refuse with `invalid_args` naming the path field: a symlink in the middle of a
 * path, a final symlink out, `..` (escaping and not), an absolute path (inside and outside), a NUL byte, and a
 * not-yet-existing target behind an escaping symlink or a dangling one.
 */
export function escapePaths(w: Workspace): Array<[label: string, path: string]> {
  return [
    ["symlink in the middle", "sub/out/secret.txt"],
    ["symlink at the start", "out/secret.txt"],
    ["final symlink out", "out"],
    ["new file behind an escaping symlink", "sub/out/new.txt"],
    ["dangling symlink out", "dangling"],
    ["dot-dot", "../outside/secret.txt"],
    ["dot-dot that stays inside lexically", "sub/../sub/out/secret.txt"],
    ["absolute outside", join(w.outside, "secret.txt")],
    ["absolute inside", join(w.ws, "sub")],
    ["NUL byte", "sub/a\u0000b.txt"],
  ];
}

/**
 * Runs `tool` once per escape path (arguments built by `argsFor`) and checks each is refused as `invalid_args`
 * naming `field`, and that nothing outside the workspace changed. Labels in `except` are left out (fs_remove
 * removes a final symlink itself, wherever it points).
 */
export async function assertEscapesRefused(
  tool: string,
  argsFor: (path: string) => Record<string, unknown>,
  field = "path",
  except: string[] = [],
): Promise<void> {
  await withWorkspace(async (w) => {
    const before = await w.outsideSnapshot();
    for (const [label, path] of escapePaths(w).filter(([label]) => !except.includes(label))) {
      const run = await runTool(tool, argsFor(path), { cwd: w.ws });
      assert.equal(run.code, 1, `${tool} ${label}: expected a refusal, got ${run.stdout}`);
      const envelope = assertFailure(run, "invalid_args", field);
      assert.doesNotMatch(String(envelope.message), /secret\n/, `${tool} ${label}: leaked contents`);
    }
    assert.deepEqual(await w.outsideSnapshot(), before, `${tool}: something outside the workspace changed`);
  });
}

/** Makes a FIFO at `path` with the system's `mkfifo` (Deno has no call for it). */
export async function makeFifo(path: string): Promise<void> {
  const made = await new Deno.Command("mkfifo", { args: [path], stdout: "null", stderr: "piped" }).output();
  assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
}

/**
 * The sha256 of a text's UTF-8 bytes as lowercase hex, worked out here (not by the tools' own code), for the
 * digests the writing tools report and check.
 */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
