/**
 * Starts the web console for a command given `--console PORT` (loaded only then): the hub fed by the calls and
 * jobs of the run, the audit view reading the workspace's log as `toolgate log` does, the trust and confinement
 * views of its manifest.
 *
 * @module
 */
import { ConsoleHub, type JobSource } from "./hub.ts";
import { type AuditSource, type ConsoleServing, serveConsole } from "./http.ts";
import { dayFiles, dayOf, keeps, readLogLine } from "../run/audit_reader.ts";
import type { Redactor } from "../state/redact.ts";
import { stateRoot } from "../state/state.ts";
import type { ManifestLocation } from "../manifest/manifest_location.ts";
import type { ToolDefinition } from "../manifest/pins.ts";
import type { SandboxMode } from "../sandbox/sandbox.ts";
import { trustSource } from "./trust_view.ts";
import { type ConfinedTool, confinementSource } from "./confinement_view.ts";

/** The most audit records the view gets at once (the newest). */
const AUDIT_ROWS = 500;

/**
 * The audit records of `dir` that pass the filter, oldest first, the newest {@linkcode AUDIT_ROWS} only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditSource } from "./start.ts";
 * assert.deepEqual(await auditSource(Deno.makeTempDirSync())({}), []);
 * ```
 */
export function auditSource(dir: string | null): AuditSource {
  return async (filter) => {
    if (dir === null) return [];
    const kept: Record<string, unknown>[] = [];
    const logFilter = {
      tools: filter.tool ? [filter.tool] : undefined,
      outcome: filter.outcome,
      since: filter.since,
    };
    // A day file is named by its UTC day: those wholly outside the window are not read.
    const day = (time: Date | undefined) => time?.toISOString().slice(0, 10).replaceAll("-", "");
    const [first, last] = [day(filter.since), day(filter.until)];
    for (const file of dayFiles(dir)) {
      if ((first !== undefined && dayOf(file) < first) || (last !== undefined && dayOf(file) > last)) {
        continue;
      }
      const lines = (await Deno.readTextFile(file)).split("\n");
      for (const [i, text] of lines.entries()) {
        if (text === "") continue;
        const entry = await readLogLine(text, file, i + 1);
        if (entry.kind !== "record" || !keeps(entry.record, logFilter)) continue;
        if (filter.until !== undefined && !(Date.parse(String(entry.record.ts)) <= filter.until.getTime())) {
          continue;
        }
        kept.push(entry.record);
      }
    }
    return kept.slice(-AUDIT_ROWS);
  };
}

/** A console being served, and the hub to hand the front end (its calls, its approvals). */
export interface StartedConsole {
  readonly hub: ConsoleHub;
  readonly serving: ConsoleServing;
}

/** What the console serves of a run. */
export interface ConsoleStart {
  /** The port on 127.0.0.1 (0: a free one). */
  readonly port: number;
  /** The run's redaction: everything the console sends goes through it. */
  readonly redact: Redactor;
  /** The workspace's audit folder (`null`: no audit log). */
  readonly auditDir: string | null;
  /** Where the jobs are read and stopped (absent: the run has none). */
  readonly jobs?: JobSource;
  /** The run's tools and MCP servers (absent: no trust and confinement views). */
  readonly run?: {
    /** The run's tools as they are now: an MCP server's join once the gateway listed them. */
    readonly tools: () => readonly ConfinedTool[];
    readonly servers: readonly string[];
    readonly definitions: (server: string) => Promise<ToolDefinition[]>;
    readonly location: ManifestLocation;
    /** Where its tools and servers run (a relative path their command lines name is looked for there too). */
    readonly workspace?: string;
    readonly sandbox: SandboxMode;
    readonly env: Readonly<Record<string, string>>;
  };
}

/**
 * Serves the console on 127.0.0.1:`port`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startConsole } from "./start.ts";
 * const { serving } = startConsole({ port: 0, redact: (text) => text, auditDir: null });
 * assert.match(serving.url, /^http:\/\/127\.0\.0\.1:\d+\//);
 * await serving.close();
 * ```
 */
export function startConsole(options: ConsoleStart): StartedConsole {
  const hub = new ConsoleHub(options.redact, options.jobs);
  const run = options.run;
  let stateDir: string | null = null;
  try {
    stateDir = run === undefined ? null : stateRoot(run.env);
  } catch {
    // No state folder: the trust view shows, and records nothing.
  }
  const serving = serveConsole({
    port: options.port,
    hub,
    redact: options.redact,
    audit: auditSource(options.auditDir),
    trust: run && trustSource({
      location: run.location,
      workspace: run.workspace,
      stateDir,
      servers: run.servers,
      definitions: run.definitions,
    }),
    confinement: run && confinementSource({ tools: run.tools, mode: run.sandbox, env: run.env }),
  });
  return { hub, serving };
}
