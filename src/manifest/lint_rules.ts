/**
 * The manifest lint's rules: each a stable name, what it checks, why (the seed it comes from), and one small
 * function over a tool that returns its findings. The phrases they look for are in `lint_phrases.ts`, the walk of
 * a schema in `lint_walk.ts`; running them over a manifest is `lint.ts`.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { ToolSpec } from "./manifest_types.ts";
import { invisibleCharacters } from "../base/invisible.ts";
import {
  CHOICE_PHRASES,
  COMPARISON_PHRASES,
  EXAMPLE_MARKER,
  firstMatch,
  FLOW_PHRASES,
  GENERIC_WORDS,
  ING_VERBS,
  MAX_NAME_WORDS,
  NON_LATIN,
  NOT_VERBS,
  OUTPUT_PHRASES,
  scriptOf,
  SENTENCE_WORDS,
  sentencesOf,
  TRIGGER_PHRASES,
} from "./lint_phrases.ts";
import { givesExample, hasClosedSet, type PropertyAt, textsOf, typesOf, walkSchema } from "./lint_walk.ts";

const quote = (text: string): string => JSON.stringify(text);

/**
 * What the lint reads of a tool: a loaded {@linkcode ToolSpec} has all of it.
 *
 * @example
 * ```ts
 * import type { LintedTool } from "./lint_rules.ts";
 * const tool: LintedTool = { index: 0, name: "get_time", description: "Get the current time." };
 * ```
 */
export type LintedTool = Pick<ToolSpec, "index" | "name" | "description" | "schema">;

/**
 * What a rule may know of the whole manifest besides the tool it checks.
 *
 * @example
 * ```ts
 * import type { LintContext } from "./lint_rules.ts";
 * const context: LintContext = { names: ["fs_read_file", "fs_write_file"] };
 * ```
 */
export interface LintContext {
  /** Every tool's name, in manifest order. */
  readonly names: readonly string[];
}

/**
 * One rule: its stable name (what `--strict` holds a manifest to and the README's table lists), what it checks,
 * why (the seed it comes from), and the function that returns one message per finding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LINT_RULES } from "./lint_rules.ts";
 * const rule = LINT_RULES.find((r) => r.name === "name-snake-case")!;
 * assert.deepEqual(rule.find({ index: 0, name: "getTime" }, { names: ["getTime"] }), [
 *   'name "getTime" is not snake_case (e.g. "get_time")',
 * ]);
 * ```
 */
export interface LintRule {
  readonly name: string;
  readonly checks: string;
  readonly why: string;
  readonly find: (tool: LintedTool, context: LintContext) => string[];
}

function objectLabel(path: string): string {
  return path === "" ? "the arguments object" : `object ${quote(path)}`;
}

/** The tool's description, or `undefined` when it has none (which `description-present` reports). */
function descriptionOf(tool: LintedTool): string | undefined {
  const text = tool.description?.trim();
  return text === undefined || text === "" ? undefined : text;
}

/** A finding when the description matches one of `patterns`. */
function phraseRule(patterns: readonly RegExp[], say: (phrase: string) => string) {
  return (tool: LintedTool): string[] => {
    const text = descriptionOf(tool);
    const phrase = text === undefined ? undefined : firstMatch(text, patterns);
    return phrase === undefined ? [] : [say(phrase)];
  };
}

const SEED_RULES = "tool-design-rules.md";
const SEED_CHECKLIST = "tool-envelope-contract.md, resilience checklist";

/**
 * The lint's rules, in the order findings are printed for each tool. (`concurrent` without `readOnly` is no
 * rule here: the loader refuses that manifest, and the lint exits 1 with its error.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LINT_RULES } from "./lint_rules.ts";
 * assert.ok(LINT_RULES.map((rule) => rule.name).includes("additional-properties-false"));
 * ```
 */
export const LINT_RULES: readonly LintRule[] = [
  {
    name: "name-snake-case",
    checks: "the name is snake_case: lower-case words of letters and digits joined by single underscores",
    why: `${SEED_RULES}: the name is the only semantic carrier; one spelling convention keeps it readable`,
    find: (tool) =>
      /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/.test(tool.name)
        ? []
        : [`name ${quote(tool.name)} is not snake_case (e.g. ${quote(snakeCase(tool.name))})`],
  },
  {
    name: "name-meaningful",
    checks:
      "the name says what the tool does: not a placeholder or a generic word alone (`tool1`, `helper`, `do_it`, `run`), at least 3 characters",
    why:
      `${SEED_RULES}: a stub's first call sees only the name ("Name is the only semantic carrier"), so it must carry the meaning`,
    find(tool) {
      if (tool.name.length < 3) return [`name ${quote(tool.name)} is too short to say what the tool does`];
      const words = tool.name.toLowerCase().split(/[_-]+/).filter((w) => w !== "");
      const generic = words.every((word) =>
        /^\d+$/.test(word) || GENERIC_WORDS.has(word.replace(/\d+$/, ""))
      );
      if (!generic) return [];
      return [
        `name ${
          quote(tool.name)
        } says nothing of what the tool does: name the action or the thing (e.g. "read_file", "weather")`,
      ];
    },
  },
  {
    name: "name-phrase",
    checks:
      `the name is a verb or a noun phrase: no instruction words (\`when\`, \`then\`, \`please\`, ...), at most ${MAX_NAME_WORDS} words`,
    why: `${SEED_RULES}: the name names the tool; when and how to call it is not the name's job`,
    find(tool) {
      const words = tool.name.toLowerCase().split(/[_-]+/).filter((w) => w !== "");
      const instruction = words.find((word) => SENTENCE_WORDS.has(word));
      if (instruction !== undefined) {
        return [
          `name ${quote(tool.name)} reads as an instruction (${
            quote(instruction)
          }): name the action or the thing`,
        ];
      }
      if (words.length > MAX_NAME_WORDS) {
        return [
          `name ${
            quote(tool.name)
          } has ${words.length} words: a phrase of at most ${MAX_NAME_WORDS} is enough`,
        ];
      }
      return [];
    },
  },
  {
    name: "description-present",
    checks: "the tool has a description",
    why: `${SEED_RULES}: the description arrives with the parameters and serves parameter-call correctness`,
    find: (tool) => descriptionOf(tool) === undefined ? ["no description: write one verb-led sentence"] : [],
  },
  {
    name: "description-one-sentence",
    checks: "the description is one sentence on one line",
    why: `${SEED_RULES}: "a single verb-led sentence by default"; anything more is a usage manual`,
    find(tool) {
      const text = descriptionOf(tool);
      if (text === undefined) return [];
      const sentences = sentencesOf(text);
      return sentences.length <= 1
        ? []
        : [`${sentences.length} sentences (or lines): keep one, saying what the tool does`];
    },
  },
  {
    name: "description-verb-first",
    checks:
      "the description starts with a verb (`Read ...`, `List ...`): not an article, a pronoun, the tool's own name or a gerund",
    why: `${SEED_RULES}: "a single verb-led sentence"`,
    find(tool) {
      const text = descriptionOf(tool);
      if (text === undefined) return [];
      const word = /^[^\p{L}\p{N}]*([\p{L}\p{N}_'’-]+)/u.exec(text)?.[1] ?? "";
      const lower = word.toLowerCase().replace("’", "'");
      const gerund = lower.length >= 5 && lower.endsWith("ing") && !ING_VERBS.has(lower);
      // The tool's own name (`get_time returns ...`) or an acronym (`HTTP client for ...`) names a thing.
      const identifier = /[_\d]/.test(word) || /^[A-Z]{2,}$/.test(word);
      // A word in another script is english-only's finding, not this rule's.
      if (NON_LATIN.test(word)) return [];
      if (!NOT_VERBS.has(lower) && !gerund && !identifier && !/^[^\p{L}]/u.test(text)) return [];
      return [
        `starts with ${
          quote(word || text.slice(0, 10))
        }, not a verb: lead with what the tool does (e.g. "Read ...")`,
      ];
    },
  },
  {
    name: "description-no-trigger",
    checks:
      'the description sets no trigger condition ("Use when ...", "Call this ...", "when the user ...")',
    why: `${SEED_RULES}: forbidden: trigger conditions; the model decides when from what the tool does`,
    find: phraseRule(
      TRIGGER_PHRASES,
      (phrase) => `trigger condition ${quote(phrase)}: say what the tool does, not when to call it`,
    ),
  },
  {
    name: "description-no-comparison",
    checks:
      'the description compares with no other tool ("instead of", "unlike", "better than", another tool\'s name)',
    why:
      `${SEED_RULES}: forbidden: tool comparisons; each description stands alone (and with lazy tools the other may not be loaded)`,
    find(tool, context) {
      const text = descriptionOf(tool);
      if (text === undefined) return [];
      const phrase = firstMatch(text, COMPARISON_PHRASES);
      if (phrase !== undefined) return [`comparison ${quote(phrase)}: describe this tool on its own`];
      // Only names that cannot be a plain English word (they hold `_` or `-`): `fs_read_file`, not `search`.
      const other = context.names.find((name) =>
        name !== tool.name && /[_-]/.test(name) &&
        new RegExp(`(?<![\\w-])${escapeRegExp(name)}(?![\\w-])`).test(text)
      );
      return other === undefined
        ? []
        : [`names another tool (${quote(other)}): describe this tool on its own`];
    },
  },
  {
    name: "description-no-flow",
    checks:
      'the description gives no flow instruction ("then call ...", "after calling ...", "followed by ...")',
    why: `${SEED_RULES}: forbidden: downstream flow instructions; the model plans the order of calls`,
    find: phraseRule(FLOW_PHRASES, (phrase) => `flow instruction ${quote(phrase)}: describe this call only`),
  },
  {
    name: "description-no-output-format",
    checks: 'the description holds no output format details ("returns JSON ...", "{path, size}", "as JSON")',
    why: `${SEED_RULES}: forbidden: output schema details; the result's shape belongs in \`outputSchema\``,
    find: phraseRule(
      OUTPUT_PHRASES,
      (phrase) => `output format detail ${quote(phrase)}: leave the result's shape to outputSchema`,
    ),
  },
  {
    name: "english-only",
    checks:
      "the description and every argument name, description and title are in a Latin script (no Han, Cyrillic, ...)",
    why: `${SEED_RULES}: "English only"; other languages belong in user-facing messages only`,
    find(tool) {
      const findings: string[] = [];
      for (const [where, text] of textsOf(tool)) {
        const run = NON_LATIN.exec(text)?.[0];
        if (run !== undefined) {
          const shown = run.length > 20 ? `${run.slice(0, 20)}...` : run;
          findings.push(
            `${where}: non-English text ${quote(shown)} (${scriptOf(run)} script): write it in English`,
          );
        }
      }
      return findings;
    },
  },
  {
    name: "additional-properties-false",
    checks:
      'every object schema (the arguments, and nested: properties, items, anyOf/oneOf/allOf, $defs, ...) has `"additionalProperties": false` (or `unevaluatedProperties: false` under draft 2019-09 or 2020-12, or a schema for a map\'s values); a tool without a schema takes anything',
    why:
      `${SEED_CHECKLIST}: "Set additionalProperties: false on every top-level (and nested object) schema" so the preflight refuses unknown keys with a pointed envelope`,
    find(tool) {
      if (tool.schema === undefined) {
        return [
          'no schema: any arguments pass unchecked; declare {"type": "object", "properties": {...}, "additionalProperties": false}',
        ];
      }
      // Draft-07 does not know unevaluatedProperties: ajv would ignore it there, and unknown keys would pass.
      const draft = tool.schema.$schema;
      const evaluates = typeof draft === "string" && /draft\/(?:2019-09|2020-12)\//.test(draft);
      const open = walkSchema(tool.schema).objects.filter(({ schema }) =>
        schema.additionalProperties !== false && !isRecord(schema.additionalProperties) &&
        !(evaluates && schema.unevaluatedProperties === false)
      );
      return open.map(({ path }) =>
        `${objectLabel(path)} lacks "additionalProperties": false: unknown keys would reach the tool`
      );
    },
  },
  {
    name: "optional-has-default",
    checks: "every optional property (not in its object's `required`) declares a `default`",
    why:
      `${SEED_RULES}: "Optional fields must declare a default"; ${SEED_CHECKLIST}: the schema's default is visible to the model`,
    find: (tool) =>
      propertiesOf(tool).filter(({ schema, optional }) => optional && !("default" in schema)).map((
        { path },
      ) => `argument ${quote(path)} is optional and declares no "default": say what leaving it out means`),
  },
  {
    name: "closed-set-enum",
    checks:
      'a string property whose description lists its choices ("one of ...", "a, b or c", "either a or b") declares them in `enum`',
    why:
      `${SEED_CHECKLIST}: "Declare enum for closed-set string values"; the preflight then normalizes their case`,
    find(tool) {
      const findings: string[] = [];
      for (const { path, schema } of propertiesOf(tool)) {
        const types = typesOf(schema);
        const itemTypes = isRecord(schema.items) ? typesOf(schema.items) : [];
        const stringy = types.includes("string") || (types.includes("array") && itemTypes.includes("string"));
        if (!stringy || hasClosedSet(schema) || typeof schema.description !== "string") continue;
        // Examples are not choices: "e.g. . or src" lists two paths, not the only two.
        const prose = schema.description.split(EXAMPLE_MARKER)[0];
        const phrase = firstMatch(prose, CHOICE_PHRASES);
        if (phrase !== undefined) {
          findings.push(`argument ${quote(path)} lists choices (${quote(phrase)}) but declares no "enum"`);
        }
      }
      return findings;
    },
  },
  {
    name: "property-example",
    checks:
      "every string, array or object property's description gives a concrete example (`e.g. ...`, or `examples`), unless an enclosing property's does; booleans, numbers, enums and consts show their form already",
    why: `${SEED_CHECKLIST}: "Concrete examples in description strings"; a model copies the form it sees`,
    find(tool) {
      const findings: string[] = [];
      for (const { path, schema, exampled } of propertiesOf(tool)) {
        const types = typesOf(schema);
        const freeForm = types.some((type) => type === "string" || type === "array" || type === "object");
        if (!freeForm || exampled || hasClosedSet(schema) || givesExample(schema)) continue;
        findings.push(
          typeof schema.description === "string"
            ? `argument ${quote(path)}: the description gives no example (add "e.g. ...")`
            : `argument ${quote(path)} has no description: describe it with an example ("e.g. ...")`,
        );
      }
      return findings;
    },
  },
  {
    name: "text-visible",
    checks:
      "no model-facing text (description, titles, argument names) carries invisible or control characters: zero-width, bidi overrides, escape sequences",
    why:
      "tool poisoning: such characters tell the model what a person reading the tool does not see (the gateway's pinned MCP tools are held to it too)",
    find(tool) {
      return textsOf(tool).flatMap(([where, text]) =>
        invisibleIn(where === "description" ? "the description" : where, text)
      );
    },
  },
];

function propertiesOf(tool: LintedTool): PropertyAt[] {
  return tool.schema === undefined ? [] : walkSchema(tool.schema).properties;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function snakeCase(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/[-\s]+/g, "_").replace(/_+/g, "_")
    .toLowerCase();
}

/**
 * One message when `text` carries invisible or control characters, naming where and which.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invisibleIn } from "./lint_rules.ts";
 * assert.deepEqual(invisibleIn("the title", "Reads.\u202E"), ["the title carries invisible or control characters (U+202E)"]);
 * ```
 */
export function invisibleIn(where: string, text: string): string[] {
  const found = invisibleCharacters(text);
  return found.length === 0 ? [] : [`${where} carries invisible or control characters (${found.join(", ")})`];
}
