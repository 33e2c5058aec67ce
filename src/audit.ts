/**
 * The audit log: one redacted NDJSON line per call in `<dir>/YYYYMMDD.log` (by UTC day), the directory 0700 and
 * the files 0600, lines from concurrent calls never interleaved, and a failed write reported once without ever
 * failing the call.
 *
 * @module
 */
import { join } from "node:path";
import type { FailureKind } from "./contract.ts";
import { redactDeep, type Redactor } from "./redact.ts";

/** One call, as the audit log records it. Never an argument value, never a variable's value. */
export interface AuditRecord {
  ts: string;
  tool: string;
  argv: readonly string[] | null;
  cwd: string;
  exit: number | null;
  signal: string | null;
  ms: number;
  stdoutBytes: number;
  stderrBytes: number;
  truncated: boolean;
  envKeys: readonly string[];
  argsBytes: number;
  argsSha256: string;
  outcome: "ok" | FailureKind;
  /** Anything looser than the defaults (sandbox off, unconfined), so that it shows. */
  warnings?: readonly string[];
  [extra: string]: unknown;
}

/** Where the audit log goes and how it reports its own trouble. */
export interface AuditOptions {
  readonly dir: string;
  readonly redact: Redactor;
  /** Told once, the first time a write fails. */
  readonly onError: (message: string) => void;
}

/** The file of a UTC day. */
export function auditFileFor(dir: string, when: Date): string {
  const day = when.toISOString().slice(0, 10).replaceAll("-", "");
  return join(dir, `${day}.log`);
}

const encoder = new TextEncoder();

/**
 * Appends audit records; writes are queued so that each line lands whole, in order.
 *
 * @example
 * ```ts
 * import { AuditLog } from "./audit.ts";
 * import { makeRedactor } from "./redact.ts";
 * const audit = new AuditLog({ dir: ".toolgate/audit", redact: makeRedactor([]), onError: console.error });
 * // await audit.write(record);
 * ```
 */
export class AuditLog {
  #dirReady = false;
  #reported = false;

  constructor(readonly options: AuditOptions) {}

  /**
   * Writes one record; resolves once it is written (or its failure reported). Never rejects. The write is
   * synchronous on purpose: a line is small, an async write costs a trip through the thread pool, several times
   * the write itself, on every call, and lines written one at a time cannot interleave.
   */
  write(record: AuditRecord): Promise<void> {
    const line = JSON.stringify(redactDeep(record, this.options.redact)) + "\n";
    this.#append(auditFileFor(this.options.dir, new Date(record.ts)), line);
    return Promise.resolve();
  }

  #append(file: string, line: string): void {
    try {
      if (!this.#dirReady) {
        Deno.mkdirSync(this.options.dir, { recursive: true, mode: 0o700 });
        this.#dirReady = true;
      }
      // One write of the whole line with O_APPEND: other toolgate processes cannot split it either.
      Deno.writeFileSync(file, encoder.encode(line), { append: true, create: true, mode: 0o600 });
    } catch (error) {
      if (this.#reported) return;
      this.#reported = true;
      this.options.onError(
        `toolgate: cannot write the audit log in ${this.options.dir}: ${(error as Error).message}`,
      );
    }
  }
}
