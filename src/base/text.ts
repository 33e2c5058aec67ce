/** Short text for people: a duration in seconds, and text cut to a length with a mark where it was cut. @module */

/** The mark a cut leaves. */
export const CUT_MARK = "…";

/**
 * A duration in milliseconds as seconds: whole seconds bare, anything else to a tenth.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seconds } from "./text.ts";
 * assert.equal(seconds(30_000), "30 s");
 * assert.equal(seconds(2_500), "2.5 s");
 * ```
 */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * `text`'s first `limit` characters and the {@linkcode CUT_MARK} when it is longer; `text` itself otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clip } from "./text.ts";
 * assert.equal(clip("a long answer", 6), "a long…");
 * assert.equal(clip("short", 6), "short");
 * ```
 */
export function clip(text: string, limit: number): string {
  return text.length > limit ? text.slice(0, limit) + CUT_MARK : text;
}

/**
 * `text` fitted into `width` characters, the {@linkcode CUT_MARK} included (a terminal line).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fit } from "./text.ts";
 * assert.equal(fit("running 3 tools: a, b, c", 12), "running 3 t…");
 * ```
 */
export function fit(text: string, width: number): string {
  return text.length > width ? text.slice(0, width - 1) + CUT_MARK : text;
}

/** The edit distance between two short texts (insertions, deletions, substitutions). */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/**
 * The names nearest to `name` (a typo, another case, a part of it), nearest first, at most `max`: for a person's
 * "did you mean".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nearestNames } from "./text.ts";
 * assert.deepEqual(nearestNames("get_tme", ["get_time", "fs_stat", "exec"]), ["get_time"]);
 * assert.deepEqual(nearestNames("time", ["get_time", "fs_stat"]), ["get_time"]);
 * ```
 */
export function nearestNames(name: string, names: readonly string[], max = 3): string[] {
  const wanted = name.toLowerCase();
  return names
    .map((candidate) => {
      const lower = candidate.toLowerCase();
      const far = lower.includes(wanted) || wanted.includes(lower) ? 1 : distance(wanted, lower);
      return { candidate, far };
    })
    .filter(({ far }) => far <= Math.max(2, Math.floor(wanted.length / 3)))
    .sort((a, b) => a.far - b.far || (a.candidate < b.candidate ? -1 : 1))
    .slice(0, max)
    .map(({ candidate }) => candidate);
}

// Characters that a terminal acts on or that a reader cannot see: C0, DEL and C1 controls, format characters
// (bidi overrides and isolates, zero-width characters, the BOM, soft hyphens, tag characters), line and
// paragraph separators, private-use and unassigned code points, and lone surrogates.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]|[\uD800-\uDFFF]/gu;

/**
 * Text with every control or invisible character written as a `\uXXXX` (or `\u{XXXXX}`) escape, so that it shows
 * as it is and does nothing to the terminal. Meant for JSON text, where a backslash is already escaped: an escape
 * it writes cannot be told apart from one the text held only when the text was not JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { visible } from "./text.ts";
 * assert.equal(visible("rm\u202e -rf \x1b[2K"), "rm\\u202e -rf \\u001b[2K");
 * ```
 */
export function visible(text: string): string {
  return text.replace(INVISIBLE, (char) => {
    const code = char.codePointAt(0)!;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/**
 * A name or path from the manifest as one visible token: as it is when it is plain printable text, else quoted
 * with every control or invisible character written out, so that a planted name cannot add or hide a line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { visibleToken } from "./text.ts";
 * assert.equal(visibleToken("tools/a.ts"), "tools/a.ts");
 * assert.equal(visibleToken("a\nb"), "\"a\\nb\"");
 * ```
 */
export function visibleToken(text: string): string {
  return /^[\x21-\x7e]+$/.test(text) ? text : visible(JSON.stringify(text));
}
