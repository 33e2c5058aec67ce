/**
 * What the launcher reads while it plans, traced rather than listed by hand: every path given to the runtime's
 * file calls and every variable read by name. The warm record (`launch_record.ts`) is made of what this finds, and
 * re-exports these names.
 *
 * @module
 */

/** What the launcher read while it planned. */
export interface TracedReads {
  /** Variables read by name. */
  readonly vars: Set<string>;
  /** Files and folders whose content was read, as given (relative ones against the working folder). */
  readonly paths: Set<string>;
  /** Files and folders only looked at or looked for (stat, realpath). */
  readonly looked: Set<string>;
  /** Why the run cannot be recorded (the whole environment was read), if it cannot. */
  readonly unrecordable: string[];
}

type Tracer = { env: Record<string, string>; reads: TracedReads; stop: () => void };

/** The file-system calls of the runtime whose first argument is a path that the decision may depend on. */
const PATH_CALLS = [
  "readTextFileSync",
  "readTextFile",
  "readFileSync",
  "readFile",
  "statSync",
  "stat",
  "lstatSync",
  "lstat",
  "realPathSync",
  "realPath",
  "readDirSync",
  "readDir",
  "readLinkSync",
  "readLink",
  "openSync",
  "open",
] as const;

/**
 * Traces what the code run until `stop()` reads: every path given to the runtime's file calls, and every variable
 * read by name from the returned `env` (a view of `env`) or from `Deno.env`. Reading the whole environment makes the
 * run unrecordable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { traceReads } from "./read_trace.ts";
 * const tracer = traceReads({ HOME: "/home/me" });
 * tracer.env.HOME;
 * try { Deno.statSync("/nonexistent"); } catch { /* traced all the same *\/ }
 * tracer.stop();
 * assert.deepEqual([...tracer.reads.vars], ["HOME"]);
 * ```
 */
export function traceReads(env: Record<string, string>): Tracer {
  const reads: TracedReads = { vars: new Set(), paths: new Set(), looked: new Set(), unrecordable: [] };
  const view = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === "string") reads.vars.add(name);
      return Reflect.get(target, name, receiver);
    },
    has(target, name) {
      if (typeof name === "string") reads.vars.add(name);
      return Reflect.has(target, name);
    },
    ownKeys(target) {
      reads.unrecordable.push("the whole environment was read");
      return Reflect.ownKeys(target);
    },
  });
  const saved: [object, string, unknown][] = [];
  const wrap = <T extends object>(
    owner: T,
    name: string,
    before: (arg: unknown, args: unknown[]) => void,
  ) => {
    const original = (owner as Record<string, unknown>)[name];
    if (typeof original !== "function") return;
    saved.push([owner, name, original]);
    (owner as Record<string, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
      before(args[0], args);
      return original.apply(this, args);
    };
  };
  for (const name of PATH_CALLS) {
    // A path only looked at counts by which file it is; one read, by its content too.
    const looks = /^(l?stat|realPath)(Sync)?$/.test(name);
    wrap(Deno, name, (path) => {
      const file = typeof path === "string"
        ? path
        : path instanceof URL && path.protocol === "file:"
        ? decodeURIComponent(path.pathname)
        : undefined;
      if (file === undefined) reads.unrecordable.push(`${name} of something that is no path`);
      else (looks ? reads.looked : reads.paths).add(file);
    });
  }
  wrap(Deno.env, "get", (name) => reads.vars.add(String(name)));
  wrap(Deno.env, "has", (name) => reads.vars.add(String(name)));
  wrap(Deno.env, "toObject", () => reads.unrecordable.push("the whole environment was read"));
  return {
    env: view,
    reads,
    stop: () => {
      for (const [owner, name, original] of saved) (owner as Record<string, unknown>)[name] = original;
    },
  };
}
