/**
 * The audit log's writer: one redacted NDJSON line per call in `<dir>/YYYYMMDD.log` (by UTC day). Nothing in it
 * can be redirected: the folder is the user's own with mode 0700 and never a link; a file is never created or
 * opened through a link, and what was opened is checked (a regular file of this user's, 0600, one link, still the
 * one the path names) before a byte goes in; no mode is ever changed through a path. Each record is one write of
 * the whole line with O_APPEND, so lines from concurrent processes never interleave, and starts on a line of its
 * own even after a torn write. Argument digests are HMAC-SHA256 under a per-user key, and so is each line (its
 * last field, `mac`; `audit_seal.ts`), so that `toolgate log` can tell a line changed by hand from one toolgate
 * wrote. A failed write is reported once and never fails the call.
 *
 * The records themselves (what a refusal, a run, a job says) are made in `run/audit.ts`, which re-exports this
 * module's names.
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { HmacSha256 } from "../base/hmac_sha256.ts";
import type { FailureKind } from "../contract.ts";
import { type Redactor, redactShared } from "./redact.ts";
import { checkPrivateDir, ensurePrivateDir } from "./private_dir.ts";
import { readKey, readOrMakeKey } from "./private_file.ts";
import { AuditFile } from "./audit_file.ts";
import { sealWith } from "./audit_seal.ts";
import { StateDirError, stateRoot } from "./state.ts";

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
  /** HMAC-SHA256 of the arguments text under the user's audit key; `null` when the key could not be had. */
  argsHmac: string | null;
  outcome: "ok" | FailureKind;
  /** Anything looser than the defaults (sandbox off, unconfined), so that it shows. */
  warnings?: readonly string[];
  [extra: string]: unknown;
}

/** Where the audit log goes, what keys its digests, and how it reports its own trouble. */
export interface AuditOptions {
  readonly dir: string;
  /** The digest key, or how to get it at the first record (as {@linkcode loadAuditKey} does). */
  readonly key: Uint8Array | (() => Uint8Array);
  readonly redact: Redactor;
  /** Told once, the first time anything fails (the folder, the key, a write). */
  readonly onError: (message: string) => void;
  /** Told after each write of one line or several (the console reads the log again then). */
  readonly onWritten?: () => void;
  /**
   * Keeps the day's file open from one record to the next (two calls fewer a line), checked again at each record
   * as if just opened; {@linkcode AuditLog.close} lets go of it. Default: opened and closed at every record.
   */
  readonly holdOpen?: boolean;
}

/** The size of the audit key, in bytes: as long as a SHA-256 digest, which is all the secret HMAC can use well. */
export const AUDIT_KEY_BYTES = 32;

/**
 * The file of a UTC day.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditFileFor } from "./audit_log.ts";
 * assert.equal(auditFileFor("/logs", new Date("2026-03-01T00:30:00+02:00")), "/logs/20260228.log");
 * ```
 */
export function auditFileFor(dir: string, when: Date): string {
  const day = when.toISOString().slice(0, 10).replaceAll("-", "");
  return join(dir, `${day}.log`);
}

/**
 * Makes the audit folder (0700) and checks it: a real folder, not a link, the user's own, mode 0700; throws
 * {@linkcode StateDirError} otherwise. With `trusted`, every folder between it and `dir` is toolgate's own and is
 * checked the same way (the default folder under the state folder); without, `dir` itself is (a folder the user
 * named, whose parents are the user's business).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { prepareAuditDir } from "./audit_log.ts";
 * const home = Deno.makeTempDirSync(); // say /home/me
 * prepareAuditDir(`${home}/.local/state/toolgate/workspaces/p-1/audit`, `${home}/.local/state`);
 * prepareAuditDir(`${home}/logs/toolgate`);
 * assert.equal(Deno.statSync(`${home}/.local/state/toolgate/workspaces/p-1/audit`).mode! & 0o777, 0o700);
 * assert.ok(Deno.statSync(`${home}/logs/toolgate`).isDirectory);
 * ```
 */
export function prepareAuditDir(dir: string, trusted?: string): void {
  if (trusted !== undefined) return ensurePrivateDir(dir, trusted);
  try {
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    // Something in the way (a file, a dangling link): the check says what.
    if (!(error instanceof Deno.errors.AlreadyExists)) {
      throw new StateDirError(`cannot create ${dir}: ${(error as Error).message}`);
    }
  }
  checkPrivateDir(dir);
}

/**
 * The audit key at `path`: read when it exists (refused when it is a link, someone else's, open to others, or not
 * 32 bytes), else made (see {@linkcode readOrMakeKey}), so that two toolgates starting at once agree on one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readOrMakeAuditKey } from "./audit_log.ts";
 * const key = readOrMakeAuditKey(`${Deno.makeTempDirSync()}/audit.key`);
 * assert.equal(key.length, 32); // bytes
 * ```
 */
export function readOrMakeAuditKey(path: string): Uint8Array {
  return readOrMakeKey(path, AUDIT_KEY_BYTES, "the audit key");
}

/**
 * The user's audit key, `<stateRoot>/audit.key`: the state folder is made and checked (0700, the user's own, no
 * link), then the key is read or made with {@linkcode readOrMakeAuditKey}. Throws {@linkcode StateDirError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadAuditKey } from "./audit_log.ts";
 * const home = Deno.makeTempDirSync(); // say /home/me
 * const key = loadAuditKey({ HOME: home }); // from /home/me/.local/state/toolgate/audit.key
 * assert.equal(key.length, 32);
 * assert.deepEqual(loadAuditKey({ HOME: home }), key); // the same next time
 * ```
 */
export function loadAuditKey(env: Readonly<Record<string, string>>): Uint8Array {
  const root = stateRoot(env);
  ensurePrivateDir(root, dirname(root));
  return readOrMakeAuditKey(join(root, "audit.key"));
}

/**
 * The user's audit key when there is one, without making it (a reader of the log has nothing to check against a
 * key made now). Throws {@linkcode StateDirError} for a key toolgate refuses.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readAuditKey } from "./audit_log.ts";
 * assert.equal(readAuditKey({ HOME: Deno.makeTempDirSync() }), undefined); // no call was audited yet
 * ```
 */
export function readAuditKey(env: Readonly<Record<string, string>>): Uint8Array | undefined {
  return readKey(join(stateRoot(env), "audit.key"), AUDIT_KEY_BYTES, "the audit key");
}

const encoder = new TextEncoder();

/**
 * Appends audit records, each one whole line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuditLog } from "./audit_log.ts";
 * import { makeRedactor } from "./redact.ts";
 * const audit = new AuditLog({
 *   dir: "/home/me/.local/state/toolgate/workspaces/p-1/audit",
 *   key: crypto.getRandomValues(new Uint8Array(32)),
 *   redact: makeRedactor([]),
 *   onError: console.error,
 * });
 * const facts = await audit.argsFacts('{"path":"a.txt"}');
 * assert.equal(facts.argsBytes, 16);
 * assert.match(facts.argsHmac ?? "", /^[0-9a-f]{64}$/);
 * ```
 */
export class AuditLog {
  #dirMade = false;
  #reported = false;
  /** `undefined` until the first record asks, `null` when it could not be had. */
  #key?: Uint8Array | null;
  #hmac?: HmacSha256;
  #lastDay?: { readonly day: string; readonly file: string };
  readonly #file: AuditFile;

  constructor(readonly options: AuditOptions) {
    this.#file = new AuditFile(options.holdOpen ?? false);
  }

  /**
   * The size and keyed digest of an arguments text. Keyed, because a bare SHA-256 of `{"token":"..."}` lets anyone
   * who reads the log confirm a guessed secret offline; without the key, a digest tells nothing but equality.
   * Computed in this thread (see {@linkcode HmacSha256}).
   */
  argsFacts(argsText: string): Promise<{ argsBytes: number; argsHmac: string | null }> {
    return Promise.resolve(this.argsFactsNow(argsText));
  }

  /** {@linkcode AuditLog.argsFacts}, at once: for a line written where nothing may be awaited (at exit). */
  argsFactsNow(argsText: string): { argsBytes: number; argsHmac: string | null } {
    const bytes = encoder.encode(argsText);
    const key = this.#signingKey();
    return { argsBytes: bytes.length, argsHmac: key === undefined ? null : key.hex(bytes) };
  }

  /**
   * The key, its HMAC pads absorbed once; `undefined` when the key could not be had. Signed in this thread (see
   * {@linkcode HmacSha256}): Web Crypto's trip through the thread pool was most of a warm gateway call's overhead.
   */
  /** The day's file of a record's timestamp, the last one remembered (the next line is nearly always that day's). */
  #fileFor(ts: string): string {
    // A timestamp as toISOString writes it names its UTC day in its first ten characters.
    const day = /^\d{4}-\d\d-\d\dT.*Z$/.test(ts) ? ts.slice(0, 10) : undefined;
    if (day !== undefined && day === this.#lastDay?.day) return this.#lastDay.file;
    const file = auditFileFor(this.options.dir, new Date(ts));
    if (day !== undefined) this.#lastDay = { day, file };
    return file;
  }

  #signingKey(): HmacSha256 | undefined {
    const key = this.#digestKey();
    if (key === null) return undefined;
    this.#hmac ??= new HmacSha256(key);
    return this.#hmac;
  }

  /**
   * Writes one record, signed (see {@linkcode sealLine}) when the key could be had; resolves once it is written
   * (or its failure reported). Never rejects. Once signed, the write is synchronous on purpose: a line is small, an
   * async write costs a trip through the thread pool, several times the write itself, on every call, and lines
   * written one at a time cannot interleave.
   */
  write(record: AuditRecord): Promise<void> {
    try {
      this.writeNow(record);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@linkcode AuditLog.write}, at once: for a line written where nothing may be awaited (at exit). Throws only
   * for a bug (a record that cannot be made JSON); a folder or file it cannot write is reported, once.
   */
  writeNow(record: AuditRecord): void {
    this.writeManyNow([record]);
  }

  /**
   * {@linkcode AuditLog.writeNow} for several records, in order: the lines of one day's file go in one write, after
   * one check of the folder and the file (a burst of calls answered together costs the system calls of one line).
   * A record that cannot be made JSON (a bug) throws after the others are written.
   */
  writeManyNow(records: readonly AuditRecord[]): void {
    const key = this.#signingKey();
    const days: { file: string; text: string }[] = [];
    let bug: unknown;
    for (const record of records) {
      let json: string;
      try {
        json = JSON.stringify(redactShared(record, this.options.redact));
      } catch (error) {
        bug ??= error;
        continue;
      }
      if (key !== undefined) json = sealWith(json, key);
      const file = this.#fileFor(record.ts);
      const last = days.at(-1);
      if (last?.file === file) last.text += json + "\n";
      else days.push({ file, text: json + "\n" });
    }
    if (days.length > 0) this.#append(days);
    if (bug !== undefined) throw bug;
  }

  /** Appends each day's lines, the folder checked first (made at the first record); trouble is reported, once. */
  #append(days: readonly { file: string; text: string }[]): void {
    const { dir } = this.options;
    try {
      if (!this.#dirMade) {
        prepareAuditDir(dir);
        this.#dirMade = true;
      }
      // Checked before every file is opened (at every write when none is held): a folder swapped for a link since
      // is refused, not followed. A held file the path still names is written through its descriptor.
      for (const { file, text } of days) this.#file.append(file, text, () => checkPrivateDir(dir));
    } catch (error) {
      this.#report(`toolgate: cannot write the audit log in ${dir}: ${(error as Error).message}`);
      return;
    }
    this.options.onWritten?.();
  }

  /**
   * Lets go of the file held open ({@linkcode AuditOptions.holdOpen}); the next record opens it again. Idempotent.
   *
   * @example
   * ```ts
   * import { AuditLog } from "./audit_log.ts";
   * import { makeRedactor } from "./redact.ts";
   * using audit = new AuditLog({ dir: Deno.makeTempDirSync(), key: new Uint8Array(32), redact: makeRedactor([]), onError: console.error, holdOpen: true });
   * audit.close();
   * ```
   */
  close(): void {
    this.#file.close();
  }

  /** {@linkcode AuditLog.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  #digestKey(): Uint8Array | null {
    if (this.#key === undefined) {
      const { key } = this.options;
      try {
        this.#key = typeof key === "function" ? key() : key;
      } catch (error) {
        this.#key = null;
        this.#report(`toolgate: the audit log goes without argument digests: ${(error as Error).message}`);
      }
    }
    return this.#key;
  }

  #report(message: string): void {
    if (this.#reported) return;
    this.#reported = true;
    this.options.onError(message);
  }
}
