/**
 * The executor's side of the audit log: what every line of a call holds (when, which tool, where, the arguments'
 * size and keyed digest), the line of a call that started no program, and the writer, or nothing when the
 * executor keeps no log. Not here: the records' shapes (src/run/audit.ts), the runs they describe.
 *
 * @module
 */
import { after, type CancelTimer } from "../base/timer.ts";
import type { Envelope } from "../contract.ts";
import { type CallFacts, refusalRecord } from "./audit.ts";
import { AuditLog, type AuditRecord, loadAuditKey } from "../state/audit_log.ts";

/**
 * The most lines that may wait behind their answers at once ({@linkcode AuditTrail.behind}): one more writes them
 * all at once. They wait one turn of the event loop; this many answered within one turn is a flood (a client's
 * burst of calls), and a flood's lines are not left to the next turn: fewer lines at stake at a crash, and no
 * queue that grows with what a caller sends.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MAX_PENDING_LINES } from "./audit_trail.ts";
 * assert.equal(MAX_PENDING_LINES, 32);
 * ```
 */
export const MAX_PENDING_LINES = 32;

/** A line waiting behind its answer: the record as the call answered, and the arguments to digest when written. */
interface PendingLine {
  readonly record: AuditRecord;
  /** The call's arguments as sent, or their size and digest made already ({@linkcode AuditTrail.argsFacts}). */
  readonly args: string | ArgsFacts;
}

/** The size and keyed digest of a call's arguments, as its audit line holds them. */
export interface ArgsFacts {
  readonly argsBytes: number;
  readonly argsHmac: string | null;
}

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

/** The trails with lines not written yet: one exit hook writes them all (a hook per line cost every call). */
const PENDING_AT_EXIT = new Set<AuditTrail>();
globalThis.addEventListener("unload", () => {
  for (const trail of [...PENDING_AT_EXIT]) trail.flush();
});

/**
 * The audit lines of one executor.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuditTrail } from "./audit_trail.ts";
 * const trail = new AuditTrail({
 *   dir: null, env: {}, redact: (text) => text, clock: () => new Date(), workspace: "/srv/p", cwd: ".",
 * });
 * assert.equal((await trail.facts(new Date(), "get_time", "{}")).argsHmac, null); // no log, no key
 * ```
 */
export class AuditTrail {
  readonly #log?: AuditLog;
  readonly #options: AuditTrailOptions;
  /** The write that the lines {@linkcode AuditTrail.before} made this turn wait for, until it has run. */
  #written?: Promise<void>;
  /** The lines written behind their answers that are not written yet, in the order the calls answered. */
  #pending: PendingLine[] = [];
  #cancelTimer?: CancelTimer;

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
  async facts(
    when: Date,
    tool: string,
    argsText: string,
    cwd: string = this.#options.workspace,
  ): Promise<CallFacts> {
    const { argsBytes, argsHmac } = await this.#log?.argsFacts(argsText) ?? { argsBytes: 0, argsHmac: null };
    return { ts: when.toISOString(), tool, cwd, argsBytes, argsHmac };
  }

  /**
   * The size and keyed digest of a call's arguments, made now (for {@linkcode AuditTrail.before}, while the call
   * waits on something else); `undefined` when there is no log.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { AuditTrail } from "./audit_trail.ts";
   * const trail = new AuditTrail({
   *   dir: Deno.makeTempDirSync(), key: new Uint8Array(32), env: {}, redact: (text) => text,
   *   clock: () => new Date(), workspace: "/srv/p", cwd: ".",
   * });
   * assert.equal(trail.argsFacts('{"a":1}')?.argsBytes, 7);
   * ```
   */
  argsFacts(argsText: string): ArgsFacts | undefined {
    return this.#log?.argsFactsNow(argsText);
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

  /**
   * Writes the pending lines ({@linkcode AuditTrail.behind}), then lets go of the log's file, when it is held
   * open; a later line opens it again.
   */
  close(): void {
    this.flush();
    this.#log?.close();
  }

  /**
   * Writes one line (nothing when there is no log), after every line still pending: the file's order is the
   * order the calls answered.
   */
  async write(record: AuditRecord): Promise<void> {
    if (!this.#log) return;
    this.flush();
    await this.#log.write(record);
  }

  /**
   * Writes a call's line behind its answer: on the next turn of the event loop, before any line written after
   * it, at {@linkcode AuditTrail.close}, or when the process ends, whichever comes first; at once when
   * {@linkcode MAX_PENDING_LINES} are waiting already. `line` is made now, from the call's facts as of `when`;
   * the arguments' size and digest (its `argsBytes` and `argsHmac`), the redaction (with every secret known
   * then: one stored in between is masked too), the signature and the write come then. A gateway call's answer
   * waits for its line ({@linkcode AuditTrail.before}), as a call that starts a program does.
   *
   * @example
   * ```ts
   * import { AuditTrail } from "./audit_trail.ts";
   * import { jobAnswerRecord } from "./audit.ts";
   * import { success } from "../contract.ts";
   * const trail = new AuditTrail({
   *   dir: Deno.makeTempDirSync(), key: new Uint8Array(32), env: {}, redact: (text) => text,
   *   clock: () => new Date(), workspace: "/srv/p", cwd: ".",
   * });
   * trail.behind(trail.now(), "mcp__fs__read_file", "{}", (facts) =>
   *   jobAnswerRecord(facts, { ms: 1, envelope: success({}) }));
   * trail.close(); // the line is in the file now
   * ```
   */
  behind(when: Date, tool: string, argsText: string, line: (facts: CallFacts) => AuditRecord): void {
    if (!this.#log) return;
    this.#push(when, tool, argsText, line);
    // The first line waiting for a turn: one timer for all the lines of this turn (a line whose answer waits for
    // it is written in this turn already, see `before`).
    if (this.#pending.length > 0 && this.#cancelTimer === undefined) {
      this.#cancelTimer = after(0, () => this.flush());
    }
  }

  /** Makes a call's line now (see `behind`) and keeps it pending; at once when too many are pending already. */
  #push(when: Date, tool: string, args: string | ArgsFacts, line: (facts: CallFacts) => AuditRecord): void {
    const record = line({
      ts: when.toISOString(),
      tool,
      cwd: this.#options.workspace,
      argsBytes: 0,
      argsHmac: null,
    });
    this.#pending.push({ record, args });
    if (this.#pending.length > MAX_PENDING_LINES) return this.flush();
    // Written when the process ends (its event loop ran dry, or `Deno.exit`) if not before: never lost then.
    if (this.#pending.length === 1) PENDING_AT_EXIT.add(this);
  }

  /**
   * Writes a call's line before its answer, together with the lines of the other calls that answer in the same
   * turn: the line waits in the pending lines until the microtasks of this turn have run (other answers parsed
   * from the same chunk of a server's output, or a burst of calls, join it), then all are written at once, in
   * order, and each call's answer goes on. `line` is made now, as for {@linkcode AuditTrail.behind}; `args` is
   * the arguments' text, or their facts made already ({@linkcode AuditTrail.argsFacts}); resolves once it is
   * written (or its failure reported).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { AuditTrail } from "./audit_trail.ts";
   * import { jobAnswerRecord } from "./audit.ts";
   * import { success } from "../contract.ts";
   * const dir = Deno.makeTempDirSync();
   * const trail = new AuditTrail({
   *   dir, key: new Uint8Array(32), env: {}, redact: (text) => text,
   *   clock: () => new Date(), workspace: "/srv/p", cwd: ".",
   * });
   * const line = (facts: Parameters<typeof jobAnswerRecord>[0]) => jobAnswerRecord(facts, { ms: 1, envelope: success({}) });
   * await Promise.all([trail.before(trail.now(), "mcp__a__x", "{}", line), trail.before(trail.now(), "mcp__a__y", "{}", line)]);
   * const [file] = [...Deno.readDirSync(dir)].filter((entry) => entry.name.endsWith(".log"));
   * assert.equal(Deno.readTextFileSync(`${dir}/${file.name}`).trim().split("\n").length, 2);
   * trail.close();
   * ```
   */
  before(
    when: Date,
    tool: string,
    args: string | ArgsFacts,
    line: (facts: CallFacts) => AuditRecord,
  ): Promise<void> {
    if (!this.#log) return Promise.resolve();
    this.#push(when, tool, args, line);
    // The write of this turn's lines, shared by every call that answers in it.
    return this.#written ??= new Promise<void>((resolve) =>
      queueMicrotask(() => {
        this.#written = undefined;
        this.flush();
        resolve();
      })
    );
  }

  /**
   * Writes every pending line ({@linkcode AuditTrail.behind}) now, in order; nothing when none waits.
   *
   * @example
   * ```ts
   * import { AuditTrail } from "./audit_trail.ts";
   * const trail = new AuditTrail({
   *   dir: null, env: {}, redact: (text) => text, clock: () => new Date(), workspace: "/srv/p", cwd: ".",
   * });
   * trail.flush(); // nothing pending, nothing written
   * ```
   */
  flush(): void {
    if (this.#pending.length === 0) return;
    const lines = this.#pending;
    this.#pending = [];
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    PENDING_AT_EXIT.delete(this);
    const log = this.#log!;
    try {
      // Set in place, the record made for these lines alone: the digest's fields stay where the record put them
      // (its key order kept), and no copy is made. One write for them all.
      for (const { record, args } of lines) {
        Object.assign(record, typeof args === "string" ? log.argsFactsNow(args) : args);
      }
      log.writeManyNow(lines.map(({ record }) => record));
    } catch (error) {
      // A bug, not the file (that is reported by the log): said; the other lines were still written.
      (this.#options.onWarning ?? console.error)(`toolgate: an audit line was not written: ${error}`);
    }
  }
}
