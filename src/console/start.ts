/**
 * Starts the web console for a command given `--console PORT` (loaded only then): the hub fed by the calls and
 * jobs of `executor`, the audit view reading the workspace's log as `toolgate log` does.
 *
 * @module
 */
import { ConsoleHub, type JobSource } from "./hub.ts";
import { type AuditSource, type ConsoleServing, serveConsole } from "./http.ts";
import { dayFiles, keeps, readLogLine } from "../run/audit_reader.ts";
import type { Redactor } from "../state/redact.ts";

/** The most audit records the view gets at once (the newest). */
const AUDIT_ROWS = 500;

/**
 * The audit records of `dir` that pass the filter, oldest first, the newest {@linkcode AUDIT_ROWS} only.
 *
 * @example
 * ```ts
 * import { auditSource } from "./start.ts";
 * await auditSource(Deno.makeTempDirSync())({}); // []
 * ```
 */
export function auditSource(dir: string | null): AuditSource {
  return async (filter) => {
    if (dir === null) return [];
    const kept: Record<string, unknown>[] = [];
    const logFilter = { tools: filter.tool ? [filter.tool] : undefined, outcome: filter.outcome };
    for (const file of dayFiles(dir)) {
      const lines = (await Deno.readTextFile(file)).split("\n");
      for (const [i, text] of lines.entries()) {
        if (text === "") continue;
        const entry = await readLogLine(text, file, i + 1);
        if (entry.kind === "record" && keeps(entry.record, logFilter)) kept.push(entry.record);
      }
    }
    return kept.slice(-AUDIT_ROWS);
  };
}

/** A console being served, and the hub to hand the tool service. */
export interface StartedConsole {
  readonly hub: ConsoleHub;
  readonly serving: ConsoleServing;
}

/**
 * Serves the console on 127.0.0.1:`port`.
 *
 * @example
 * ```ts ignore
 * import { startConsole } from "./start.ts";
 * const { serving } = startConsole({ port: 0, redact: (text) => text, auditDir: null });
 * await serving.close();
 * ```
 */
export function startConsole(
  options: { port: number; redact: Redactor; auditDir: string | null; jobs?: JobSource },
): StartedConsole {
  const hub = new ConsoleHub(options.redact, options.jobs);
  const serving = serveConsole({
    port: options.port,
    hub,
    redact: options.redact,
    audit: auditSource(options.auditDir),
  });
  return { hub, serving };
}
