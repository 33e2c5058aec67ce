/**
 * Finds a secret in the reversible forms a careless tool prints it in: base64 and base64url (at each of the three
 * alignments inside a longer stream, with or without padding), hex, URL-encoding, reversed, in any letter case,
 * and any run of {@linkcode MIN_RUN} or more of its characters in order, also spaced out by a few separators.
 *
 * The run rule keeps to secret-like runs (`secret_like.ts`): the whole value is found as it is, reversed, in any
 * case and spaced out, but a run of it (a fragment), as a form writes it, only when it looks like a secret rather
 * than words. A run with a digit or a symbol (as hex and percent-encoding always write one) is found in any case;
 * a run whose only oddity is its letter case (`tVariabl`, `AKIAIOSF`) only in that case; a run of plain words
 * (`secret v`, `variable`, `Hello Wo`, or its reverse) never, so that a value which shares a word with ordinary
 * text (a warning, a tool's output) leaves that text as it is. A value made of words alone (a passphrase) is found
 * whole, and in its encodings, but not by its fragments as text.
 *
 * One matcher, linear in the text: every form is cut into windows of a fixed length (the length that holds
 * {@linkcode MIN_RUN} characters of the secret in that form), and the text is scanned once per window length with
 * a rolling hash, on its case-folded self and on its skeleton (letters and digits only, each mapped back to where
 * it stood). A longer run is the union of the windows it holds, so no match needs extending. No regular
 * expression is built from a secret: nothing here can backtrack.
 *
 * @module
 */
import { type RunCase, runCase } from "./secret_like.ts";

/** The shortest run of a secret that is masked beyond its literal forms; a shorter secret has only those. */
export const MIN_RUN = 8;

/** The most separator characters (spaces, punctuation) between two characters of a spaced-out secret. */
const MAX_GAP = 8;

/** Writes one character of a secret as some encoder does (JSON escaping, percent-encoding, hex). */
export type CharEncoder = (char: string) => string;

/** Base64 puts 8 bytes in 10.7 characters: 10 hold at least 7.5 of them, and each alignment of an 8-byte secret. */
const BASE64_WINDOW = 10;

const encoder = new TextEncoder();

function hexOf(char: string): string {
  return encoder.encode(char).toHex();
}

/** Every byte but RFC 3986's unreserved ones percent-encoded (Python's `quote(safe="")`, Go's escapers). */
function percentAll(char: string): string {
  return /^[A-Za-z0-9\-._~]$/.test(char)
    ? char
    : [...encoder.encode(char)].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("");
}

/** A browser's encoder; a lone surrogate, which it refuses, as it is. */
function safely(encode: (text: string) => string): CharEncoder {
  return (char) => {
    try {
      return encode(char);
    } catch {
      return char;
    }
  };
}

/**
 * The per-character encoders beside the caller's own (JSON escapings): percent-encoding as the common encoders
 * write it, `+` for a space or not (hex case does not matter: matching ignores case), and hex.
 */
const ENCODERS: readonly CharEncoder[] = [
  (char) => char,
  percentAll,
  (char) => char === " " ? "+" : percentAll(char),
  safely(encodeURIComponent),
  (char) => char === " " ? "+" : safely(encodeURIComponent)(char),
  (char) => new URLSearchParams({ v: char }).toString().slice(2),
  safely(encodeURI),
  hexOf,
];

/**
 * The characters of base64 that only the secret's bytes decide, for each of the three places it can start at in
 * a longer stream (0, 1 or 2 bytes past a multiple of 3), and the secret's own encoding, padded.
 */
function base64Forms(bytes: Uint8Array): string[] {
  const forms = [bytes.toBase64()];
  for (let before = 0; before < 3; before++) {
    const shifted = new Uint8Array(before + bytes.length);
    shifted.set(bytes, before);
    const start = Math.ceil(8 * before / 6);
    const end = Math.floor((8 * before + 8 * bytes.length) / 6);
    forms.push(shifted.toBase64().slice(start, end));
  }
  return forms.flatMap((form) => [form, form.replaceAll("+", "-").replaceAll("/", "_")]);
}

/**
 * Every run of {@linkcode MIN_RUN} characters of `secret`, forwards and backwards, as each encoder writes it, with
 * how many of the run's characters are letters or digits and how it is looked for ({@linkcode runCase} of the
 * run as written).
 */
function runsOf(
  secret: string,
  encoders: readonly CharEncoder[],
): { readonly text: string; readonly content: number; readonly found: RunCase }[] {
  const runs = new Map<string, { text: string; content: number; found: RunCase }>();
  for (const chars of [[...secret], [...secret].reverse()]) {
    const content = chars.map((char) => isContent(char.charCodeAt(0)) ? 1 : 0);
    for (const encode of encoders) {
      const written = chars.map(encode);
      for (let i = 0; i + MIN_RUN <= chars.length; i++) {
        let count = 0;
        for (let j = i; j < i + MIN_RUN; j++) count += content[j];
        // Judged as it is written: hex or percent-encoding of words is no text of words.
        const text = written.slice(i, i + MIN_RUN).join("");
        const found = runCase(text);
        runs.set(`${found}:${text}`, { text, content: count, found });
      }
    }
  }
  return [...runs.values()];
}

/** Whether a code unit is content (a letter, a digit, anything past ASCII) rather than a separator. */
function isContent(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) ||
    code >= 0x80;
}

/**
 * The text in lower case, code unit for code unit (a position in it is the same position in `text`): the rare
 * character whose lower case is longer (`İ`) keeps its case.
 */
function fold(text: string): string {
  const lower = text.toLowerCase();
  if (lower.length === text.length) return lower;
  let out = "";
  for (const char of text) {
    const low = char.toLowerCase();
    out += low.length === char.length ? low : char;
  }
  return out;
}

/** A folded text's code units. */
function codesOf(folded: string): Uint16Array {
  const codes = new Uint16Array(folded.length);
  for (let i = 0; i < folded.length; i++) codes[i] = folded.charCodeAt(i);
  return codes;
}

/** The letters and digits of a folded text (as code units), and where each stood in it. */
function skeleton(codes: Uint16Array): { codes: Uint16Array; at: Int32Array } {
  const at = new Int32Array(codes.length);
  const kept = new Uint16Array(codes.length);
  let n = 0;
  for (let i = 0; i < codes.length; i++) {
    if (isContent(codes[i])) {
      at[n] = i;
      kept[n++] = codes[i];
    }
  }
  return { codes: kept.subarray(0, n), at: at.subarray(0, n) };
}

/** A skeleton as a string (for the forms of a secret, which are short). */
function bareText(text: string): string {
  let out = "";
  for (const code of skeleton(codesOf(text)).codes) out += String.fromCharCode(code);
  return out;
}

const BASE = 1_000_003;

function hashOf(codes: ArrayLike<number>, from: number, length: number): number {
  let hash = 0;
  for (let i = from; i < from + length; i++) hash = (Math.imul(hash, BASE) + codes[i]) | 0;
  return hash;
}

/** Whether `codes` holds `window` at `start`. */
function holds(codes: Uint16Array, start: number, window: string): boolean {
  for (let i = 0; i < window.length; i++) if (codes[start + i] !== window.charCodeAt(i)) return false;
  return true;
}

/** Windows of one length, by rolling hash; a hash hit is confirmed against the window itself. */
class WindowSet {
  readonly #byHash = new Map<number, string[]>();
  /** One byte per low 16 bits of a hash: most windows of a text are turned away here, without a map lookup. */
  readonly #seen = new Uint8Array(1 << 16);
  /** BASE to the power length - 1, modulo 2^32: what the character leaving the window weighs. */
  readonly #top: number;

  constructor(readonly length: number) {
    let top = 1;
    for (let i = 1; i < length; i++) top = Math.imul(top, BASE);
    this.#top = top;
  }

  get size(): number {
    return this.#byHash.size;
  }

  add(window: string): void {
    const hash = hashOf(codesOf(window), 0, window.length);
    const bucket = this.#byHash.get(hash);
    this.#seen[hash & 0xffff] = 1;
    if (bucket === undefined) this.#byHash.set(hash, [window]);
    else if (!bucket.includes(window)) bucket.push(window);
  }

  /** Calls `hit` with the start of every window of `codes` that is in the set. */
  scan(codes: Uint16Array, hit: (start: number) => void): void {
    const length = this.length;
    if (codes.length < length || this.#byHash.size === 0) return;
    let hash = hashOf(codes, 0, length);
    for (let start = 0;; start++) {
      if (this.#seen[hash & 0xffff] === 1) {
        const bucket = this.#byHash.get(hash);
        if (bucket !== undefined && bucket.some((window) => holds(codes, start, window))) hit(start);
      }
      if (start + length >= codes.length) return;
      hash = (Math.imul(hash - Math.imul(codes[start], this.#top), BASE) + codes[start + length]) | 0;
    }
  }
}

/**
 * Whole values, found by their first {@linkcode MIN_RUN} characters and then checked whole: one scan finds every
 * value, however many there are and whatever their lengths.
 */
class WholeValues {
  readonly #anchors = new WindowSet(MIN_RUN);
  readonly #forms = new Map<string, string[]>();
  get size(): number {
    return this.#forms.size;
  }
  add(form: string): void {
    if (form.length < MIN_RUN) return;
    const anchor = form.slice(0, MIN_RUN);
    this.#anchors.add(anchor);
    this.#forms.set(anchor, [...new Set([...(this.#forms.get(anchor) ?? []), form])]);
  }
  /** Calls `hit` with the start and the length of every whole value `codes` holds. */
  scan(codes: Uint16Array, hit: (start: number, length: number) => void): void {
    this.#anchors.scan(codes, (start) => {
      const anchor = String.fromCharCode(...codes.subarray(start, start + MIN_RUN));
      for (const form of this.#forms.get(anchor) ?? []) {
        if (holds(codes, start, form)) hit(start, form.length);
      }
    });
  }
}

/**
 * The matcher of the encoded forms and runs of some secrets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecretMatcher } from "./secret_matcher.ts";
 * const matcher = new SecretMatcher(["hunter2-Zq9x7Kp"]);
 * const text = `b64=${btoa("hunter2-Zq9x7Kp")} up=HUNTER2-ZQ9X7KP`;
 * const covered = new Uint8Array(text.length);
 * assert.ok(matcher.cover(text, covered)); // both forms are marked in `covered`
 * ```
 */
export class SecretMatcher {
  /** Windows of the forms as they are (case-folded), by length. */
  readonly #plain = new Map<number, WindowSet>();
  /** Windows of the forms' skeletons, by length: they find a form with separators between its characters. */
  readonly #spaced = new Map<number, WindowSet>();
  /** Windows of the runs that are secret-like only by their letter case, as they are (not folded), by length. */
  readonly #ownCase = new Map<number, WindowSet>();
  /** The skeletons of those, by length. */
  readonly #ownCaseSpaced = new Map<number, WindowSet>();
  /** The whole values, forwards and backwards (case-folded), and their skeletons. */
  readonly #whole = new WholeValues();
  readonly #wholeSpaced = new WholeValues();

  /**
   * `secrets`: the values; those shorter than {@linkcode MIN_RUN} are left out (only their literal forms are
   * masked, by the caller). `escapings`: more ways to write one character (the JSON escapings of the caller).
   */
  constructor(secrets: readonly string[], escapings: readonly CharEncoder[] = []) {
    const encoders = [...ENCODERS, ...escapings];
    for (const secret of secrets) {
      const chars = [...secret];
      if (chars.length < MIN_RUN) continue;
      // The whole value, forwards and backwards: found in any case and spaced out, words or not (its encodings are
      // found by their runs, none of which reads as words).
      for (const order of [chars, [...chars].reverse()]) {
        const folded = fold(order.join(""));
        this.#whole.add(folded);
        this.#wholeSpaced.add(bareText(folded));
      }
      for (const run of runsOf(secret, encoders)) {
        // A run mostly of punctuation (`"type":"`) is shared with ordinary structured text: not worth a mark.
        if (run.found === "none" || run.content * 4 < MIN_RUN * 3) continue;
        this.#add(run.found === "any" ? fold(run.text) : run.text, run.found);
      }
      // Spaced out: 8 of its letters and digits in a row, whatever separators stood between them; judged on the
      // stretch of the value they span (separators included).
      for (const order of [chars, [...chars].reverse()]) {
        const at: number[] = [];
        order.forEach((char, i) => isContent(char.charCodeAt(0)) && at.push(i));
        for (let i = 0; i + MIN_RUN <= at.length; i++) {
          const stretch = order.slice(at[i], at[i + MIN_RUN - 1] + 1).join("");
          const found = runCase(stretch);
          if (found === "none") continue;
          const bare = bareText(found === "any" ? fold(stretch) : stretch);
          this.#set(found === "any" ? this.#spaced : this.#ownCaseSpaced, bare.length).add(bare);
        }
      }
      for (const form of base64Forms(encoder.encode(secret))) {
        // A window of base64 that reads as words (rare: ten letters in one case) is no fragment worth a mark.
        for (let i = 0; i + BASE64_WINDOW <= form.length; i++) {
          const window = form.slice(i, i + BASE64_WINDOW);
          if (runCase(window) !== "none") this.#add(fold(window), "any");
        }
      }
    }
  }

  /** A window as it is, and its letters and digits alone (found with separators between them). */
  #add(window: string, found: "any" | "own"): void {
    this.#set(found === "any" ? this.#plain : this.#ownCase, window.length).add(window);
    const bare = bareText(window);
    if (bare.length >= MIN_RUN) {
      this.#set(found === "any" ? this.#spaced : this.#ownCaseSpaced, bare.length).add(bare);
    }
  }

  #set(sets: Map<number, WindowSet>, length: number): WindowSet {
    let set = sets.get(length);
    if (set === undefined) sets.set(length, set = new WindowSet(length));
    return set;
  }

  /** Whether there is anything to find. */
  get empty(): boolean {
    const sets = [this.#plain, this.#spaced, this.#ownCase, this.#ownCaseSpaced];
    return this.#whole.size === 0 &&
      sets.every((byLength) => [...byLength.values()].every((set) => set.size === 0));
  }

  /**
   * Marks in `covered` (one byte per code unit of `text`) every character of every form or run found; true when
   * anything was found.
   */
  cover(text: string, covered: Uint8Array): boolean {
    if (this.empty) return false;
    let found = false;
    const mark = (from: number, to: number) => {
      covered.fill(1, from, to);
      found = true;
    };
    const folded = codesOf(fold(text));
    const bare = scanAll(folded, this.#plain, this.#spaced, mark);
    this.#whole.scan(folded, (start, length) => mark(start, start + length));
    this.#wholeSpaced.scan(bare.codes, (start, length) => {
      if (gapsFit(bare.at, start, start + length - 1)) mark(bare.at[start], bare.at[start + length - 1] + 1);
    });
    if (this.#ownCase.size > 0 || this.#ownCaseSpaced.size > 0) {
      scanAll(codesOf(text), this.#ownCase, this.#ownCaseSpaced, mark);
    }
    return found;
  }
}

/** Whether no two neighbours among the skeleton's characters `first` to `last` stand too far apart in the text. */
function gapsFit(at: Int32Array, first: number, last: number): boolean {
  for (let i = first; i < last; i++) if (at[i + 1] - at[i] - 1 > MAX_GAP) return false;
  return true;
}

/**
 * Scans `codes` for the windows of `plain`, and its skeleton for those of `spaced`; `mark` gets each find. Returns
 * the skeleton.
 */
function scanAll(
  codes: Uint16Array,
  plain: ReadonlyMap<number, WindowSet>,
  spaced: ReadonlyMap<number, WindowSet>,
  mark: (from: number, to: number) => void,
): { codes: Uint16Array; at: Int32Array } {
  for (const set of plain.values()) set.scan(codes, (start) => mark(start, start + set.length));
  const bare = skeleton(codes);
  for (const set of spaced.values()) {
    set.scan(bare.codes, (start) => {
      const last = start + set.length - 1;
      if (gapsFit(bare.at, start, last)) mark(bare.at[start], bare.at[last] + 1);
    });
  }
  return bare;
}
