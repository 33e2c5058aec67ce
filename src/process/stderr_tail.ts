/**
 * The last line a running tool wrote to stderr, for a person's progress line: many tools say how far they are
 * there (`step 1/3`, a progress bar redrawn with carriage returns). Only whole lines count (ended by a newline
 * or a carriage return): a line still being written could be part of a secret that the masking would only
 * recognise whole.
 *
 * @module
 */
import { plainLine } from "../base/terminal.ts";

/** The most characters of one line kept while it is written; the rest of a longer line is dropped. */
const MAX_LINE = 4096;

/**
 * Follows a stream's bytes and tells `onLine` its last whole line that has words in it, made plain
 * ({@linkcode plainLine}: no escape sequence, no control character), each time that changes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StderrTail } from "./stderr_tail.ts";
 * const lines: string[] = [];
 * const tail = new StderrTail((line) => lines.push(line));
 * tail.push(new TextEncoder().encode("step 1/3\nstep 2"));
 * tail.push(new TextEncoder().encode("/3\r\x1b[2K\n"));
 * assert.deepEqual(lines, ["step 1/3", "step 2/3"]);
 * ```
 */
export class StderrTail {
  readonly #onLine: (line: string) => void;
  readonly #decoder = new TextDecoder();
  /** The line being written, up to {@linkcode MAX_LINE} characters. */
  #partial = "";
  #last = "";

  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }

  /** The next bytes of the stream. */
  push(chunk: Uint8Array): void {
    const text = this.#decoder.decode(chunk, { stream: true });
    const lines = text.split(/[\r\n]/);
    if (lines.length === 1) {
      this.#partial = (this.#partial + text).slice(0, MAX_LINE);
      return;
    }
    lines[0] = this.#partial + lines[0];
    this.#partial = lines.pop()!.slice(0, MAX_LINE);
    // Only the last line with words in it matters: the others are gone before anyone could read them.
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = plainLine(lines[i].slice(0, MAX_LINE));
      if (line === "") continue;
      if (line !== this.#last) {
        this.#last = line;
        this.#onLine(line);
      }
      return;
    }
  }
}

/**
 * A runner's `onStderr` that tells `onLine` the tool's last stderr line as a person may see it: made plain
 * first, then `mask` takes out the secrets (in that order, so that an escape sequence written into the middle of
 * a secret cannot hide it from the masking).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stderrLines } from "./stderr_tail.ts";
 * const seen: string[] = [];
 * const onStderr = stderrLines((line) => seen.push(line), (text) => text.replaceAll("s3cret", "[REDACTED]"));
 * onStderr(new TextEncoder().encode("token s3\x1b[0mcret\n\x1b[2K\n"));
 * assert.deepEqual(seen, ["token [REDACTED]"]);
 * ```
 */
export function stderrLines(
  onLine: (line: string) => void,
  mask: (text: string) => string = (text) => text,
): (chunk: Uint8Array) => void {
  const tail = new StderrTail((line) => onLine(mask(line)));
  return (chunk) => tail.push(chunk);
}
