/**
 * The executor's side of the audit log: what every line of a call holds (when, which tool, where, the arguments'
 * size and keyed digest), the line of a call that started no program, and the writer, or nothing when the
 * executor keeps no log. Not here: the records' shapes (src/run/audit.ts), the runs they describe.
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import { AuditLog, type AuditRecord, type CallFacts, loadAuditKey, refusalRecord } from "./audit.ts";

/**
 * What an {@linkcode AuditTrail} writes to, and how.
 *
 * @example
 * ```ts
 * import type { AuditTrailOptions } from "./audit_trail.ts";
 * const options: AuditTrailOptions = {
 *   dir: null, env: {}, redact: (text) => text, clock: () => new Date(), workspace: "/srv/p", cwd: ".",
 * };
 * ```
 */
export interface AuditTrailOptions {
  /** The audit directory, or `null` for no audit log. */
  readonly dir: string | null;
  /** The key of the arguments' digests (default: read or made in the state folder of `env`). */
  readonly key?: Uint8Array;
  /** The environment whose state folder holds the key. */
  readonly env: Readonly<Record<string, string>>;
  /** Redacts each line, with every secret known when it is written. */
  readonly redact: (text: string) => string;
  /** Where a failed write is reported, once (default: stderr). */
  readonly onWarning?: (message: string) => void;
  /** Told after each line is written. */
  readonly onAudit?: () => void;
  /** Keeps the day's file open between lines until {@linkcode AuditTrail.close} (see `AuditOptions.holdOpen`). */
  readonly holdOpen?: boolean;
  /** The clock of the lines' timestamps. */
  readonly clock: () => Date;
  /** The workspace: where a call runs, by default. */
  readonly workspace: string;
  /** The working directory as given: where a call that started nothing is said to be. */
  readonly cwd: string;
}

/**
 * The audit lines of one executor.
 *
 * @example
 * ```ts
 * import { AuditTrail } from "./audit_trail.ts";
 * const trail = new AuditTrail({
 *   dir: null, env: {}, redact: (text) => text, clock: () => new Date(), workspace: "/srv/p", cwd: ".",
 * });
 * (await trail.facts(new Date(), "get_time", "{}")).argsHmac; // null: no log, no key
 * ```
 */
export class AuditTrail {
  readonly #log?: AuditLog;
  readonly #options: AuditTrailOptions;

  /** A trail over `options.dir` (no log when `null`). */
  constructor(options: AuditTrailOptions) {
    this.#options = options;
    if (options.dir !== null) {
      this.#log = new AuditLog({
        dir: options.dir,
        key: options.key ?? (() => loadAuditKey(options.env)),
        // Through the function: a secret stored during the run is redacted from the next line on.
        redact: options.redact,
        onError: options.onWarning ?? ((message) => console.error(message)),
        onWritten: options.onAudit,
        holdOpen: options.holdOpen,
      });
    }
  }

  /** The time now, by the trail's clock. */
  now(): Date {
    return this.#options.clock();
  }

  /** What every audit line of a call holds: when, which tool, where (default the workspace), the arguments' facts. */
  async facts(when: Date, tool: string, argsText: string, cwd = this.#options.workspace): Promise<CallFacts> {
    const { argsBytes, argsHmac } = await this.#log?.argsFacts(argsText) ?? { argsBytes: 0, argsHmac: null };
    return { ts: when.toISOString(), tool, cwd, argsBytes, argsHmac };
  }

  /** The audit line of a call that started no program: refused, or answered in this process. */
  async unrun(
    name: string,
    argsText: string,
    envelope: Envelope,
    facts: Readonly<Record<string, string | boolean>> = {},
  ): Promise<void> {
    if (!this.#log) return;
    await this.write({
      ...refusalRecord(await this.facts(this.now(), name, argsText, this.#options.cwd), envelope),
      ...facts,
    });
  }

  /** Lets go of the log's file, when it is held open; a later line opens it again. */
  close(): void {
    this.#log?.close();
  }

  /** Writes one line (nothing when there is no log). */
  async write(record: AuditRecord): Promise<void> {
    if (this.#log) await this.#log.write(record);
  }
}
