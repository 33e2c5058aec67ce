/** Short text for people: a duration in seconds, and text cut to a length with a mark where it was cut. @module */

/** The mark a cut leaves. */
export const CUT_MARK = "…";

/**
 * A duration in milliseconds as seconds: whole seconds bare, anything else to a tenth.
 *
 * @example
 * ```ts
 * import { seconds } from "./text.ts";
 * seconds(30_000); // "30 s"
 * seconds(2_500); // "2.5 s"
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
 * import { clip } from "./text.ts";
 * clip("a long answer", 6); // "a long…"
 * clip("short", 6); // "short"
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
 * import { fit } from "./text.ts";
 * fit("running 3 tools: a, b, c", 12); // "running 3 t…"
 * ```
 */
export function fit(text: string, width: number): string {
  return text.length > width ? text.slice(0, width - 1) + CUT_MARK : text;
}
