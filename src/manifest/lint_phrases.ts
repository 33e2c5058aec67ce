/**
 * The phrases the manifest lint looks for, as data: what marks an example, which first words are not verbs, the
 * trigger, comparison, flow, output-format and choice phrases, the generic and sentence words of names, and the
 * scripts that are not English; with the small matchers that read them. A new phrase is one more line here.
 *
 * @module
 */
/**
 * A concrete example in a description: `e.g. ...`, `for example ...`, `such as ...`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EXAMPLE_MARKER } from "./lint_phrases.ts";
 * assert.ok(EXAMPLE_MARKER.test("A path, e.g. src/main.ts"));
 * ```
 */
export const EXAMPLE_MARKER = /\be\.g\.|\bfor example\b|\bsuch as\b|\bexample:/i;

/** Abbreviations whose period ends no sentence. */
const ABBREVIATIONS = /\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|a\.k\.a|min|max|no)\./gi;

/**
 * First words that are not a verb: articles, pronouns, prepositions, auxiliaries, and the tool talking of itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NOT_VERBS } from "./lint_phrases.ts";
 * assert.ok(NOT_VERBS.has("this"));
 * ```
 */
export const NOT_VERBS = new Set([
  ..."a an the this that these those it its it's my our your their we i you he she they".split(" "),
  ..."for to with in on of by from at as into about via when if whenever while once because".split(" "),
  ..."and or but so is are was were be been can could will would should shall may might must".split(" "),
  ..."tool function helper utility util wrapper command script program method endpoint api service".split(
    " ",
  ),
  ..."plugin module simple basic useful powerful generic new all any each every some here there".split(" "),
  // Verbs, but of what the tool permits rather than what it does: "Allows the model to read files".
  ..."allows enables lets helps".split(" "),
]);

/**
 * Words ending in -ing that are verbs, not gerunds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ING_VERBS } from "./lint_phrases.ts";
 * assert.ok(ING_VERBS.has("ping"));
 * ```
 */
export const ING_VERBS = new Set([
  "bring",
  "ping",
  "ring",
  "sing",
  "swing",
  "sting",
  "fling",
  "wring",
  "cling",
  "sling",
]);

/**
 * When to call the tool: a usage manual, not what the tool does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TRIGGER_PHRASES } from "./lint_phrases.ts";
 * assert.ok(TRIGGER_PHRASES.some((p) => p.test("Use when the user asks.")));
 * ```
 */
export const TRIGGER_PHRASES: readonly RegExp[] = [
  /\buse\s+(?:this|it|me)\b/i,
  /\buse\s+(?:when|whenever|if|only|for|to)\b/i,
  /\b(?:call|invoke|choose)\s+(?:this|me)\b/i,
  /\b(?:call|invoke)\s+(?:when|whenever|if)\b/i,
  /\b(?:when|if|whenever)\s+(?:the\s+)?(?:user|you|model|assistant|agent)\b/i,
  /\b(?:when|whenever)\s+(?:needed|necessary|required|asked)\b/i,
  /\buseful\s+(?:for|when|to|if)\b/i,
  /\b(?:should|must|can|may)\s+be\s+(?:used|called|invoked)\b/i,
  /\b(?:only|always|never)\s+(?:use|call|invoke)\b/i,
  /\b(?:do not|don't)\s+(?:use|call|invoke)\b/i,
];

/**
 * Another tool measured against this one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { COMPARISON_PHRASES } from "./lint_phrases.ts";
 * assert.ok(COMPARISON_PHRASES.some((p) => p.test("Faster than grep.")));
 * ```
 */
export const COMPARISON_PHRASES: readonly RegExp[] = [
  /\binstead of\b/i,
  /\brather than\b/i,
  /\bunlike\b/i,
  /\b(?:better|worse|faster|slower|safer|simpler|cheaper|quicker|preferable)\s+than\b/i,
  /\bprefer(?:red)?\s+(?:over|to)\b/i,
  /\b(?:compared|in contrast)\s+(?:to|with)\b/i,
  /\b(?:similar|identical)\s+to\b/i,
  /\bthe same as\b/i,
  /\b(?:alternative|counterpart)\s+to\b/i,
  /\bvs\.?(?=\s)|\bversus\b/i,
];

/**
 * What to call before or after this tool: the model plans the order, not the description.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FLOW_PHRASES } from "./lint_phrases.ts";
 * assert.ok(FLOW_PHRASES.some((p) => p.test("List files, then call read_file.")));
 * ```
 */
export const FLOW_PHRASES: readonly RegExp[] = [
  /\bthen\s+(?:call|use|run|invoke|pass|feed|try|retry|ask|check)\b/i,
  /\b(?:after|before|once)\s+(?:calling|using|running|invoking|you\b|the model\b|it\b|this\b|that\b)/i,
  /\bfollowed by\b/i,
  /\bafterwards?\b/i,
  /\b(?:first|next),?\s+(?:call|use|run|invoke)\b/i,
  /\bpass\s+(?:the|its|this)\s+(?:result|output)\b/i,
];

/**
 * The shape of the result: it belongs in `outputSchema`, not in the description.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OUTPUT_PHRASES } from "./lint_phrases.ts";
 * assert.ok(OUTPUT_PHRASES.some((p) => p.test("Returns a JSON object.")));
 * ```
 */
export const OUTPUT_PHRASES: readonly RegExp[] = [
  /\b(?:returns?|returning|responds?\s+with|outputs?|prints?|yields?|emits?)\b[^.;]*?\b(?:JSON|YAML|XML|CSV|NDJSON|object|array|dict|dictionary|map|fields?|keys?|schema|format|envelope|table|list)\b/i,
  /\{\s*["'`]?[A-Za-z_][\w-]*["'`]?\s*[:,}]/,
  /\b(?:as|in)\s+(?:JSON|YAML|XML|CSV|NDJSON)\b/i,
];

/**
 * Words that say nothing of what a tool does, alone or together (`do_it`, `run`, `tool1`, `my_helper`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GENERIC_WORDS } from "./lint_phrases.ts";
 * assert.ok(GENERIC_WORDS.has("helper"));
 * ```
 */
export const GENERIC_WORDS = new Set([
  ..."tool tools helper helpers util utils utility utilities misc stuff thing things something".split(" "),
  ..."do it run execute go handle handler process call invoke action task function func fn cmd".split(" "),
  ..."command main tmp temp foo bar baz qux example sample api service plugin my new custom generic".split(
    " ",
  ),
  ..."default x the a".split(" "),
]);

/**
 * Words that turn a name into an instruction: a name is a verb or a noun phrase, not a sentence.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SENTENCE_WORDS } from "./lint_phrases.ts";
 * assert.ok(SENTENCE_WORDS.has("please"));
 * ```
 */
export const SENTENCE_WORDS = new Set(
  "when whenever if then please should must maybe me you".split(" "),
);
/**
 * More words than this and a name reads as a sentence.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MAX_NAME_WORDS } from "./lint_phrases.ts";
 * assert.ok("read_the_whole_file_now_please".split("_").length > MAX_NAME_WORDS);
 * ```
 */
export const MAX_NAME_WORDS = 5;

/**
 * Choices spelled out in prose: "one of ...", "either a or b", `"a" or "b"`, "a, b or c".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CHOICE_PHRASES } from "./lint_phrases.ts";
 * assert.ok(CHOICE_PHRASES.some((p) => p.test("One of fast or slow.")));
 * ```
 */
export const CHOICE_PHRASES: readonly RegExp[] = [
  /\bone of\b/i,
  /\b(?:allowed|valid|possible|accepted|supported)\s+values\b/i,
  /\beither\s+["'`]?[\w.-]+["'`]?\s+or\s+/i,
  /(["'`])[\w.-]+\1\s+or\s+(["'`])[\w.-]+\2/,
  /(?:^|[\s(:])["'`]?[\w./+-]{1,20}["'`]?,\s+["'`]?[\w./+-]{1,20}["'`]?(?:,\s+["'`]?[\w./+-]{1,20}["'`]?)*,?\s+or\s+["'`]?[\w./+-]{1,20}\b/,
];

/**
 * Any letter outside the Latin script (digits, punctuation and symbols are Common and pass).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NON_LATIN } from "./lint_phrases.ts";
 * assert.equal(NON_LATIN.exec("Read 文件")?.[0], "文件");
 * ```
 */
export const NON_LATIN = /[^\p{Script=Latin}\p{Script=Common}\p{Script=Inherited}]+/u;
const SCRIPTS = [
  "Han",
  "Hiragana",
  "Katakana",
  "Hangul",
  "Cyrillic",
  "Greek",
  "Arabic",
  "Hebrew",
  "Devanagari",
  "Thai",
] as const;

/** The text a pattern matched, cut for a message. */
function matched(text: string, pattern: RegExp): string | undefined {
  const found = pattern.exec(text);
  if (!found) return undefined;
  const phrase = found[0].trim();
  return phrase.length > 40 ? `${phrase.slice(0, 37)}...` : phrase;
}

/**
 * The first of `patterns` that `text` matches, as the matched text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { firstMatch, TRIGGER_PHRASES } from "./lint_phrases.ts";
 * assert.equal(firstMatch("Use this to read.", TRIGGER_PHRASES), "Use this");
 * ```
 */
export function firstMatch(text: string, patterns: readonly RegExp[]): string | undefined {
  for (const pattern of patterns) {
    const phrase = matched(text, pattern);
    if (phrase !== undefined) return phrase;
  }
  return undefined;
}

/**
 * The script of a run of non-Latin text, by name (`Han`, `Cyrillic`, ...), for a message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scriptOf } from "./lint_phrases.ts";
 * assert.equal(scriptOf("文件"), "Han");
 * ```
 */
export function scriptOf(text: string): string {
  return SCRIPTS.find((script) => new RegExp(`\\p{Script=${script}}`, "u").test(text)) ?? "non-Latin";
}

/**
 * The sentences (or lines) of a text; the period of an abbreviation (`e.g.`, `etc.`) ends none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sentencesOf } from "./lint_phrases.ts";
 * assert.equal(sentencesOf("Read a file, e.g. a.txt. Then stop.").length, 2);
 * ```
 */
export function sentencesOf(text: string): string[] {
  const masked = text.trim().replace(ABBREVIATIONS, (abbreviation) => abbreviation.replaceAll(".", "\u00b7"));
  return masked.split(/(?<=[.!?]["')\]]*)\s+(?=\S)|\n+/).filter((part) => part.trim() !== "");
}
