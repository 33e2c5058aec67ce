/**
 * The likely fix for an MCP server that did not start, read from what it was and what it left: a package runner
 * (`npx`, `uvx`, ...) that cannot download inside the sandbox, a host the egress proxy refused it, a path it did not
 * find outside what its sandbox shows, a name it could not resolve without a network; and its last stderr lines.
 *
 * Not here: starting the server and timing its `initialize` (`upstream.ts`), reading which paths stderr names
 * (`process/missing_path.ts`).
 *
 * @module
 */
import { basename } from "../base/paths.ts";
import { hiddenPaths, missingPaths, readFolderFor } from "../process/missing_path.ts";
import type { SandboxView } from "../process/run_envelope.ts";

/** Programs that fetch a package at start: inside the sandbox they cannot. */
const PACKAGE_RUNNERS = new Set(["npx", "uvx", "pipx", "bunx", "pnpx", "uv"]);

/** A name lookup that failed for want of a network (Node's and Python's words). */
const NAME_LOOKUP =
  /(?:getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|Could not resolve host:?|Failed to resolve) '?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/;

/** What a failed start left to read. */
export interface StartFacts {
  /** The entry's `command`, as written. */
  readonly command: string;
  /** What it wrote on stderr (its last few KiB). */
  readonly stderr: string;
  /** Hosts the egress proxy refused it during the start. */
  readonly refusedHosts: readonly string[];
  /** What its sandbox showed, when it ran confined. */
  readonly view?: SandboxView;
}

/**
 * The likely fix for a server that did not start, in a few words, or `undefined` when nothing points at one.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { startHint } from "./start_hint.ts";
 * equal(
 *   startHint({ command: "node", stderr: "Error: Cannot find module '/home/me/srv/node_modules/x/index.js'", refusedHosts: [], view: { visible: ["/usr"], reads: [] } }),
 *   "add /home/me/srv/node_modules to permissions.read",
 * );
 * equal(
 *   startHint({ command: "npx", stderr: "", refusedHosts: [] }),
 *   "npx cannot download inside the sandbox: run `toolgate trust` to install it pinned",
 * );
 * ```
 */
export function startHint(facts: StartFacts): string | undefined {
  const runner = basename(facts.command);
  if (PACKAGE_RUNNERS.has(runner)) {
    return `${runner} cannot download inside the sandbox: run \`toolgate trust\` to install it pinned`;
  }
  if (facts.refusedHosts.length > 0) {
    const hosts = [...new Set(facts.refusedHosts)];
    return `it tried to reach ${hosts.join(", ")}, which its profile's net does not list (add ${
      hosts.length > 1 ? "them" : "it"
    } to permissions.net if it should)`;
  }
  if (facts.view !== undefined) {
    const view = facts.view;
    const hidden = hiddenPaths(missingPaths(facts.stderr).paths, view.visible)
      .filter((path) => view.refuses?.(readFolderFor(path)) === undefined);
    if (hidden.length > 0) return `add ${readFolderFor(hidden[0])} to permissions.read`;
  }
  const lookup = NAME_LOOKUP.exec(facts.stderr);
  if (lookup !== null) {
    return `it tried to reach ${
      lookup[1]
    }, and its profile has no network for it (list the host in permissions.net if it should)`;
  }
  return undefined;
}

/**
 * What a server's stderr says at a failed start, on one line: the last line naming an error (Node ends its report
 * with its version, after a stack), then the last `count` lines with words in them, stack frames left out, each
 * cut to 200 characters, joined with ` | `.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { lastLines } from "./start_hint.ts";
 * equal(lastLines("Error: no config\n    at main (x.js:1)\n\nNode.js v20\n", 2), "Error: no config | Node.js v20");
 * ```
 */
export function lastLines(stderr: string, count: number): string {
  const lines = stderr.split("\n").map((line) => line.trim())
    .filter((line) => line !== "" && !/^at /.test(line));
  const said = lines.findLast((line) => /error|not found|denied|cannot/i.test(line));
  const tail = lines.slice(-count);
  const shown = said === undefined || tail.includes(said) ? tail : [said, ...tail.slice(1)];
  return shown.map((line) => line.slice(0, 200)).join(" | ");
}

/**
 * Why a stdio server did not start, on one line: `what` happened, the likely fix ({@linkcode startHint}), and its
 * last stderr lines ({@linkcode lastLines}).
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { startFailure } from "./start_hint.ts";
 * equal(
 *   startFailure("it ended at start (exit 1)", { command: "uvx", stderr: "offline\n", refusedHosts: [] }),
 *   "the server did not start: it ended at start (exit 1); likely fix: uvx cannot download inside the sandbox: " +
 *     "run `toolgate trust` to install it pinned; its last stderr lines: offline",
 * );
 * ```
 */
export function startFailure(what: string, facts: StartFacts): string {
  const hint = startHint(facts);
  const tail = lastLines(facts.stderr, 5);
  return `the server did not start: ${what}${hint === undefined ? "" : `; likely fix: ${hint}`}${
    tail === "" ? "" : `; its last stderr lines: ${tail}`
  }`;
}
