/**
 * What the egress proxy is set up with and what it reports: its limits (per call, pending, how long a head and a
 * dial may take), the decision it makes on each connection (for the audit line), and where its socket is (the
 * launcher's choice, else one in toolgate's state).
 *
 * @module
 */
import { join } from "../base/paths.ts";

/**
 * What the proxy decided about one connection, for the audit line.
 *
 * @example
 * ```ts
 * import type { EgressDecision } from "./proxy_settings.ts";
 * const refused: EgressDecision = { host: "evil.example", port: 443, allowed: false };
 * ```
 */
export interface EgressDecision {
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  /** Why a request was refused although its host is listed (a credential's placeholder out of place). */
  readonly reason?: string;
}

/**
 * What one proxy lets a call hold: a tool in a sandbox can open connections without end, and every one is a file
 * descriptor of toolgate's (two once it reaches a host); without bounds a tool takes them all, and toolgate, every
 * session of `serve` with it, can no longer open anything.
 *
 * @example
 * ```ts
 * import { PROXY_LIMITS, type ProxyLimits } from "./proxy_settings.ts";
 * const strict: ProxyLimits = { ...PROXY_LIMITS, perCall: 4 };
 * ```
 */
export interface ProxyLimits {
  /** Connections one call may hold at once (each with its upstream); any further one is closed at once. */
  readonly perCall: number;
  /** Connections not yet known to belong to a call (no call line yet), over all calls; the oldest goes first. */
  readonly pending: number;
  /** How long a connection may take to send its whole request head, from its accept (slow ones are closed). */
  readonly headMs: number;
  /** How long a connection to an allowed host may take to open. */
  readonly dialMs: number;
  /**
   * CA certificates (PEM) trusted for the hosts the credential broker connects to, besides the system's roots
   * (a test's own CA; a company's).
   */
  readonly upstreamCa?: readonly string[];
}

/**
 * The proxy's limits by default.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROXY_LIMITS } from "./proxy_settings.ts";
 * assert.equal(PROXY_LIMITS.perCall, 64);
 * ```
 */
export const PROXY_LIMITS: ProxyLimits = { perCall: 64, pending: 64, headMs: 10_000, dialMs: 10_000 };

/**
 * The variable in which the launcher names the proxy's socket (so that its run may listen there).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROXY_SOCKET_ENV } from "./proxy_settings.ts";
 * assert.equal(PROXY_SOCKET_ENV, "TOOLGATE_PROXY_SOCKET");
 * ```
 */
export const PROXY_SOCKET_ENV = "TOOLGATE_PROXY_SOCKET";

/** The variable naming a file of CA certificates (PEM) toolgate trusts for the hosts credentials go to. */
export const UPSTREAM_CA_ENV = "TOOLGATE_UPSTREAM_CA";

/**
 * Where this process's proxy listens: the launcher's choice, else a socket of its own in toolgate's state.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { proxySocketPath } from "./proxy_settings.ts";
 * assert.equal(proxySocketPath({}, "/home/me/.local/state/toolgate"), `/home/me/.local/state/toolgate/proxy/${Deno.pid}.sock`);
 * ```
 */
export function proxySocketPath(env: Readonly<Record<string, string>>, stateDir: string): string {
  return env[PROXY_SOCKET_ENV] || join(stateDir, "proxy", `${Deno.pid}.sock`);
}

/** The most bytes a Unix socket's path may have on Linux (`sun_path`, 108 with its NUL). */
export const SOCKET_PATH_MAX = 107;

/**
 * Why a Unix socket cannot be bound at `path` (its path is too long), with the fix; `undefined` when it can.
 * toolgate's sockets live in its state folder, under the home folder: a long home leaves too few bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { socketPathProblem } from "./proxy_settings.ts";
 * assert.equal(socketPathProblem("/home/me/.local/state/toolgate/proxy/1.sock"), undefined);
 * assert.match(socketPathProblem(`/home/${"x".repeat(90)}/.local/state/toolgate/proxy/1.sock`)!, /set XDG_STATE_HOME/);
 * ```
 */
export function socketPathProblem(path: string): string | undefined {
  const bytes = new TextEncoder().encode(path).length;
  if (bytes <= SOCKET_PATH_MAX) return undefined;
  return `its socket's path ${path} is ${bytes} bytes, past the ${SOCKET_PATH_MAX} a Unix socket's path may have: ` +
    "set XDG_STATE_HOME to a shorter folder (toolgate keeps its state there)";
}
