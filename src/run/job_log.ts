/**
 * A background job's log: the bytes of its stdout and stderr in the order they arrive, in a file capped and
 * rotated once (at most twice the cap on disk), and its last bytes kept in memory so that a poll never reads the
 * disk. Not here: the job (src/run/job.ts).
 *
 * @module
 */
import { truncateForModel } from "../contract.ts";

/**
 * The bytes of a log file, rotated once past its cap, and its last bytes kept in memory.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JobLog } from "./job_log.ts";
 * const dir = await Deno.makeTempDir();
 * const log = new JobLog(`${dir}/job-1.log`, 1024, 4096);
 * log.write(new TextEncoder().encode("built\n"));
 * assert.equal(log.tail(10, 1000), "built");
 * log.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class JobLog {
  /** The file being written (the older one is `<path>.1`). */
  readonly path: string;
  readonly #max: number;
  readonly #tailMax: number;
  #file: Deno.FsFile | undefined;
  #size = 0;
  #total = 0;
  #tail: Uint8Array[] = [];
  #tailSize = 0;
  #tailCut = false;
  #failed = false;

  /** A new log file at `path` (made here, never opened through anything already there). */
  constructor(path: string, maxBytes: number, tailBytes: number) {
    this.path = path;
    this.#max = Math.max(1, maxBytes);
    this.#tailMax = tailBytes;
    this.#file = JobLog.#create(path);
  }

  /** A new file of this user's, never opened through anything already there (a name nobody could guess). */
  static #create(path: string): Deno.FsFile {
    return Deno.openSync(path, { write: true, createNew: true, mode: 0o600 });
  }

  /** Every byte the job printed, kept or not. */
  get bytes(): number {
    return this.#total;
  }

  /** Appends a chunk: to the file (rotating it at the cap) and to the tail in memory. */
  write(chunk: Uint8Array): void {
    this.#total += chunk.length;
    this.#remember(chunk);
    let rest = chunk;
    while (rest.length > 0 && this.#file !== undefined && !this.#failed) {
      if (this.#size >= this.#max) this.#rotate();
      if (this.#file === undefined) break;
      const piece = rest.subarray(0, this.#max - this.#size);
      try {
        let written = 0;
        while (written < piece.length) written += this.#file.writeSync(piece.subarray(written));
      } catch {
        // A full disk: the job goes on, its tail in memory still answers polls.
        this.#failed = true;
        break;
      }
      this.#size += piece.length;
      rest = rest.subarray(piece.length);
    }
  }

  #rotate(): void {
    this.#file?.close();
    this.#file = undefined;
    try {
      // The older file is replaced whole: a rename never follows a link at the destination.
      Deno.renameSync(this.path, `${this.path}.1`);
      this.#file = JobLog.#create(this.path);
      this.#size = 0;
    } catch {
      this.#failed = true;
    }
  }

  #remember(chunk: Uint8Array): void {
    this.#tail.push(chunk);
    this.#tailSize += chunk.length;
    while (this.#tail.length > 1 && this.#tailSize - this.#tail[0].length >= this.#tailMax) {
      this.#tailSize -= this.#tail.shift()!.length;
      this.#tailCut = true;
    }
  }

  /** The last `lines` lines the job printed (from memory), cut to `maxChars` head-and-tail. */
  tail(lines: number, maxChars: number): string {
    if (lines <= 0 || this.#tailSize === 0) return "";
    const bytes = new Uint8Array(this.#tailSize);
    let offset = 0;
    for (const chunk of this.#tail) {
      bytes.set(chunk, offset);
      offset += chunk.length;
    }
    let text = new TextDecoder().decode(bytes);
    // Memory kept a window of the output: its first line may have lost its start.
    if (this.#tailCut) text = text.slice(text.indexOf("\n") + 1);
    const all = text.split("\n");
    if (all.at(-1) === "") all.pop();
    return truncateForModel(all.slice(-lines).join("\n"), maxChars);
  }

  /** Closes the file: the job has ended. */
  close(): void {
    this.#file?.close();
    this.#file = undefined;
  }
}
