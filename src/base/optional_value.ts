/**
 * An option whose value may be left out (`--console` or `--console 8080`): written out whole before any parser
 * reads the command line, so that the launcher's scan and the command's parser read it alike.
 *
 * @module
 */

/**
 * `argv` with every bare `--NAME` (or `-NAME`) not followed by a value `accepts` turned into `--NAME=FALLBACK`.
 * Anything after `--` is left as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withOptionalValue } from "./optional_value.ts";
 * assert.deepEqual(withOptionalValue(["serve", "--console"], "console", "0", /^\d+$/), ["serve", "--console=0"]);
 * assert.deepEqual(withOptionalValue(["serve", "--console", "8080"], "console", "0", /^\d+$/), ["serve", "--console", "8080"]);
 * assert.deepEqual(withOptionalValue(["run", "--console", "--prompt", "hi"], "console", "0", /^\d+$/), ["run", "--console=0", "--prompt", "hi"]);
 * ```
 */
export function withOptionalValue(
  argv: readonly string[],
  name: string,
  fallback: string,
  accepts: RegExp,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (token === "--") return [...out, ...argv.slice(i)];
    const bare = token === `--${name}` || token === `-${name}`;
    const next = argv[i + 1];
    out.push(bare && (next === undefined || !accepts.test(next)) ? `--${name}=${fallback}` : token);
  }
  return out;
}

/**
 * What a port option takes as its value (digits only; a range check comes later, with its own message).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PORT_VALUE } from "./optional_value.ts";
 * assert.ok(PORT_VALUE.test("8080"));
 * assert.equal(PORT_VALUE.test("--prompt"), false);
 * ```
 */
export const PORT_VALUE = /^\d+$/;
