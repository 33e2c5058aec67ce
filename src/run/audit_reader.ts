/**
 * Reads an audit folder back (`toolgate log`): its day files in order, each line checked (JSON, an audit record,
 * its digest under the user's key), filtered, and told as one readable line per call.
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { checkLineMac } from "../state/audit_seal.ts";
import { isRecord } from "../contract.ts";

/** A day file's name, as `auditFileFor` makes it. */
const DAY_FILE = /^(\d{8})\.log$/;

/** How far a line can be trusted: signed and checked, signed but changed since, or not signed at all. */
export type Integrity = "verified" | "altered" | "unsigned" | "unchecked";

/** One line of the log, read: a record with how far it can be trusted, or a line that is no record. */
export type LogEntry =
  | {
    readonly kind: "record";
    readonly file: string;
    readonly line: number;
    readonly record: Readonly<Record<string, unknown>>;
    readonly integrity: Integrity;
  }
  | { readonly kind: "damaged"; readonly file: string; readonly line: number; readonly why: string };

/**
 * Reads one line of `file` (`lineNumber` from 1): `unchecked` when there is no key to check it with.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readLogLine } from "./audit_reader.ts";
 * const entry = await readLogLine('{"ts":"2026-01-01T00:00:00.000Z","tool":"t","outcome":"ok"}', "a.log", 1);
 * assert.equal(entry.kind, "record");
 * assert.equal((await readLogLine('{"ts":"2026-01-01', "a.log", 2)).kind, "damaged");
 * ```
 */
export async function readLogLine(
  text: string,
  file: string,
  lineNumber: number,
  key?: CryptoKey,
): Promise<LogEntry> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "damaged", file, line: lineNumber, why: "not JSON (a torn write, or an edit)" };
  }
  if (!isRecord(value) || typeof value.ts !== "string" || typeof value.tool !== "string") {
    return { kind: "damaged", file, line: lineNumber, why: "not an audit record (no ts or tool)" };
  }
  const integrity = key === undefined
    ? (/"mac":"[0-9a-f]{64}"\}$/.test(text) ? "unchecked" : "unsigned")
    // A line toolgate wrote ends with its digest: a line that parses but does not is told apart.
    : await checkLineMac(text, key);
  const { mac: _mac, ...record } = value;
  return { kind: "record", file, line: lineNumber, record, integrity };
}

/**
 * The day files of an audit folder, oldest first (none when the folder does not exist yet).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dayFiles } from "./audit_reader.ts";
 * assert.deepEqual(dayFiles(Deno.makeTempDirSync()), []);
 * ```
 */
export function dayFiles(dir: string): string[] {
  const names: string[] = [];
  try {
    for (const entry of Deno.readDirSync(dir)) {
      if (entry.isFile && DAY_FILE.test(entry.name)) names.push(entry.name);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return names.sort().map((name) => join(dir, name));
}

/** The UTC day (`YYYYMMDD`) a day file holds. */
export function dayOf(file: string): string {
  return DAY_FILE.exec(file.slice(file.lastIndexOf("/") + 1))?.[1] ?? "";
}

/** What `toolgate log` keeps: by tool, by outcome, since when. */
export interface LogFilter {
  readonly tools?: readonly string[];
  /** `ok`, `failed` (any failure), or one failure kind. */
  readonly outcome?: string;
  readonly since?: Date;
}

/**
 * Whether a record passes the filter.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keeps } from "./audit_reader.ts";
 * assert.ok(keeps({ tool: "t", outcome: "timeout", ts: "2026-01-01T00:00:00Z" }, { outcome: "failed" }));
 * ```
 */
export function keeps(record: Readonly<Record<string, unknown>>, filter: LogFilter): boolean {
  if (filter.tools !== undefined && filter.tools.length > 0 && !filter.tools.includes(String(record.tool))) {
    return false;
  }
  if (filter.outcome !== undefined) {
    const outcome = String(record.outcome);
    if (filter.outcome === "failed" ? outcome === "ok" : outcome !== filter.outcome) return false;
  }
  if (filter.since !== undefined && !(Date.parse(String(record.ts)) >= filter.since.getTime())) return false;
  return true;
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--since`: an age (`30s`, `10m`, `2h`, `7d`) counted back from `now`, or a time (`2026-11-26`,
 * `2026-11-26T10:00:00Z`); `undefined` when it is neither.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSince } from "./audit_reader.ts";
 * assert.equal(parseSince("2h", new Date("2026-01-01T12:00:00Z"))?.toISOString(), "2026-01-01T10:00:00.000Z");
 * assert.equal(parseSince("yesterday", new Date()), undefined);
 * ```
 */
export function parseSince(text: string, now: Date): Date | undefined {
  const age = /^(\d+)\s*([smhd])$/.exec(text.trim());
  if (age) return new Date(now.getTime() - Number(age[1]) * UNITS[age[2]]);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text.trim())) return undefined;
  const time = Date.parse(text.trim());
  return Number.isNaN(time) ? undefined : new Date(time);
}

function duration(ms: unknown): string {
  if (typeof ms !== "number") return "-";
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`;
}

/**
 * One record as a line for people: time (UTC), tool, outcome, duration, who approved it, and what else stands out
 * (run in the background, stopped by a person, unconfined, a line whose digest does not match).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatEntry } from "./audit_reader.ts";
 * const entry = { ts: "2026-11-26T05:08:12.345Z", tool: "get_time", outcome: "ok", ms: 12, approved_by: "read-only" };
 * assert.equal(
 *   formatEntry(entry, "verified"),
 *   "2026-11-26 05:08:12Z  get_time              ok                12ms    approved: read-only",
 * );
 * ```
 */
export function formatEntry(record: Readonly<Record<string, unknown>>, integrity: Integrity): string {
  const ts = String(record.ts);
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(ts)
    ? `${ts.slice(0, 10)} ${ts.slice(11, 19)}Z`
    : ts;
  const outcome = String(record.outcome ?? "-");
  // A call that never reached a program (unknown, bad arguments, refused) was approved by no one.
  const by = typeof record.approved_by === "string"
    ? `approved: ${record.approved_by}`
    : outcome === "user_denied"
    ? "denied"
    : record.argv === null
    ? "not run"
    : "approved: ?";
  const notes: string[] = [];
  if (record.background === true) notes.push(record.job_state ? `job ${record.job_state}` : "job started");
  if (record.killed_by === "user") notes.push("stopped by a person");
  if (record.sandbox === "none") notes.push("unconfined");
  if (integrity === "altered") notes.push("ALTERED: its digest does not match");
  const parts = [time, String(record.tool).padEnd(20), outcome.padEnd(16), duration(record.ms).padEnd(6), by];
  if (notes.length > 0) parts.push(`(${notes.join(", ")})`);
  return parts.join("  ");
}
