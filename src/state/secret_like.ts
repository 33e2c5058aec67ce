/**
 * Which runs of a secret look like a secret rather than words: the rule that keeps the masking of a secret's
 * fragments (`secret_matcher.ts`) off ordinary text. A run with a digit or a symbol is a secret in any letter
 * case; a run whose only oddity is its case (a capital inside a word, a word all in capitals) in that case only;
 * a run of words as ordinary text writes them (all lower case, or one capital and then lower case, between white
 * space and common punctuation) is not one.
 *
 * Not here: finding the runs in a text (`secret_matcher.ts`).
 *
 * @module
 */

/** The marks ordinary text puts between words: white space and common punctuation (not `#$%&*+=@^|~\\<>`). */
const PROSE_MARK = /^[\s.,;:!?'"`()[\]{}\-_/]$/u;
const LETTER = /^[\p{L}\p{M}]$/u;

/**
 * Whether a run of a secret looks like a secret rather than words, as it is written (its letter case counts): it
 * holds a digit, a symbol other than the marks between words (white space, `.,;:!?'"` and backquote, brackets,
 * `-`, `_`, `/`), or a word (its letters between two such marks) that is neither all lower case nor one capital
 * and then lower case (`tVariable`, `AKIAIOSF`, `kPl`). Judged on a run's lower case, it says whether the run is
 * a secret in any letter case.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretLike } from "./secret_like.ts";
 * assert.equal(secretLike("variable"), false);
 * assert.equal(secretLike("secret v"), false);
 * assert.equal(secretLike("Hello, W"), false);
 * assert.equal(secretLike("Zq9x7KpL"), true); // a digit
 * assert.equal(secretLike("pa$$word"), true); // a symbol
 * assert.equal(secretLike("tVariabl"), true); // a capital inside a word
 * assert.equal(secretLike("tvariabl"), false); // ...which its lower case has not
 * ```
 */
export function secretLike(run: string): boolean {
  let word = "";
  for (const char of [...run, " "]) {
    if (LETTER.test(char)) {
      word += char;
      continue;
    }
    if (!PROSE_MARK.test(char)) return true;
    if (word !== "" && !wordLike(word)) return true;
    word = "";
  }
  return false;
}

/** A word as ordinary text writes it: all lower case (or caseless), or one capital and then lower case. */
function wordLike(word: string): boolean {
  const [first, ...rest] = [...word];
  const tail = rest.join("");
  return tail === tail.toLowerCase() && (first === first.toLowerCase() || first === first.toUpperCase());
}

/** How a run of a secret is looked for: in any letter case, in its own case only, or not at all (words). */
export type RunCase = "any" | "own" | "none";

/**
 * How a run is looked for: in any case when its lower case is {@linkcode secretLike}, else in its own case when
 * it is, else not at all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runCase } from "./secret_like.ts";
 * assert.equal(runCase("x7KpL2mN"), "any");
 * assert.equal(runCase("ySecretV"), "own");
 * assert.equal(runCase("ecret va"), "none");
 * ```
 */
export function runCase(run: string): RunCase {
  if (secretLike(run.toLowerCase())) return "any";
  return secretLike(run) ? "own" : "none";
}
