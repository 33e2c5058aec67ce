/**
 * The manifest lint: the seeds' rules for tools that models call well (the four rules and the description rules of
 * tool-design-rules.md, the resilience checklist of tool-envelope-contract.md) as named rules over each tool's name,
 * description and argument schema. A rule is data (a stable name, what it checks, why) and one small function that
 * returns its findings; the patterns the heuristics look for are data too, so a new phrase is one more line.
 *
 * One piece: the rules are data over one walk of a tool's schema, and the phrases they look for are theirs
 * alone. What splits it, after the branches that edit it have landed: phrases, the walk, the rules.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { ToolSpec } from "./manifest.ts";
import { invisibleCharacters } from "../base/invisible.ts";
import type { PinSet } from "./pins.ts";

/**
 * What the lint reads of a tool: a loaded {@linkcode ToolSpec} has all of it.
 *
 * @example
 * ```ts
 * import type { LintedTool } from "./lint.ts";
 * const tool: LintedTool = { index: 0, name: "get_time", description: "Get the current time." };
 * ```
 */
export type LintedTool = Pick<ToolSpec, "index" | "name" | "description" | "schema">;

/**
 * What a rule may know of the whole manifest besides the tool it checks.
 *
 * @example
 * ```ts
 * import type { LintContext } from "./lint.ts";
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
 * import { LINT_RULES } from "./lint.ts";
 * const rule = LINT_RULES.find((r) => r.name === "name-snake-case")!;
 * rule.find({ index: 0, name: "getTime" }, { names: ["getTime"] }); // ['name "getTime" is not snake_case ...']
 * ```
 */
export interface LintRule {
  readonly name: string;
  readonly checks: string;
  readonly why: string;
  readonly find: (tool: LintedTool, context: LintContext) => string[];
}

/**
 * One finding: which tool, which rule, and what is wrong there.
 *
 * @example
 * ```ts
 * import { formatFinding, type LintFinding } from "./lint.ts";
 * const finding: LintFinding = { index: 2, tool: "helper", rule: "name-meaningful", message: "..." };
 * formatFinding(finding); // 'tool[2] "helper": name-meaningful: ...'
 * ```
 */
export interface LintFinding {
  /** The tool's position in the manifest. */
  readonly index: number;
  /** The tool's name. */
  readonly tool: string;
  /** The rule's name. */
  readonly rule: string;
  readonly message: string;
  /** The MCP server whose tool this is (`tool` then names it on its server); absent for the manifest's tools. */
  readonly server?: string;
}

type Schema = Record<string, unknown>;

// --- the patterns, as data ------------------------------------------------------------------------------------------

/** A concrete example in a description: `e.g. ...`, `for example ...`, `such as ...`. */
const EXAMPLE_MARKER = /\be\.g\.|\bfor example\b|\bsuch as\b|\bexample:/i;

/** Abbreviations whose period ends no sentence. */
const ABBREVIATIONS = /\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|a\.k\.a|min|max|no)\./gi;

/** First words that are not a verb: articles, pronouns, prepositions, auxiliaries, and the tool talking of itself. */
const NOT_VERBS = new Set([
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

/** Words ending in -ing that are verbs, not gerunds. */
const ING_VERBS = new Set([
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

/** When to call the tool: a usage manual, not what the tool does. */
const TRIGGER_PHRASES: readonly RegExp[] = [
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

/** Another tool measured against this one. */
const COMPARISON_PHRASES: readonly RegExp[] = [
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

/** What to call before or after this tool: the model plans the order, not the description. */
const FLOW_PHRASES: readonly RegExp[] = [
  /\bthen\s+(?:call|use|run|invoke|pass|feed|try|retry|ask|check)\b/i,
  /\b(?:after|before|once)\s+(?:calling|using|running|invoking|you\b|the model\b|it\b|this\b|that\b)/i,
  /\bfollowed by\b/i,
  /\bafterwards?\b/i,
  /\b(?:first|next),?\s+(?:call|use|run|invoke)\b/i,
  /\bpass\s+(?:the|its|this)\s+(?:result|output)\b/i,
];

/** The shape of the result: it belongs in `outputSchema`, not in the description. */
const OUTPUT_PHRASES: readonly RegExp[] = [
  /\b(?:returns?|returning|responds?\s+with|outputs?|prints?|yields?|emits?)\b[^.;]*?\b(?:JSON|YAML|XML|CSV|NDJSON|object|array|dict|dictionary|map|fields?|keys?|schema|format|envelope|table|list)\b/i,
  /\{\s*["'`]?[A-Za-z_][\w-]*["'`]?\s*[:,}]/,
  /\b(?:as|in)\s+(?:JSON|YAML|XML|CSV|NDJSON)\b/i,
];

/** Words that say nothing of what a tool does, alone or together (`do_it`, `run`, `tool1`, `my_helper`). */
const GENERIC_WORDS = new Set([
  ..."tool tools helper helpers util utils utility utilities misc stuff thing things something".split(" "),
  ..."do it run execute go handle handler process call invoke action task function func fn cmd".split(" "),
  ..."command main tmp temp foo bar baz qux example sample api service plugin my new custom generic".split(
    " ",
  ),
  ..."default x the a".split(" "),
]);

/** Words that turn a name into an instruction: a name is a verb or a noun phrase, not a sentence. */
const SENTENCE_WORDS = new Set(
  "when whenever if then please should must maybe me you".split(" "),
);
/** More words than this and a name reads as a sentence. */
const MAX_NAME_WORDS = 5;

/** Choices spelled out in prose: "one of ...", "either a or b", `"a" or "b"`, "a, b or c". */
const CHOICE_PHRASES: readonly RegExp[] = [
  /\bone of\b/i,
  /\b(?:allowed|valid|possible|accepted|supported)\s+values\b/i,
  /\beither\s+["'`]?[\w.-]+["'`]?\s+or\s+/i,
  /(["'`])[\w.-]+\1\s+or\s+(["'`])[\w.-]+\2/,
  /(?:^|[\s(:])["'`]?[\w./+-]{1,20}["'`]?,\s+["'`]?[\w./+-]{1,20}["'`]?(?:,\s+["'`]?[\w./+-]{1,20}["'`]?)*,?\s+or\s+["'`]?[\w./+-]{1,20}\b/,
];

/** Any letter outside the Latin script (digits, punctuation and symbols are Common and pass). */
const NON_LATIN = /[^\p{Script=Latin}\p{Script=Common}\p{Script=Inherited}]+/u;
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

// --- small helpers --------------------------------------------------------------------------------------------------

const quote = (text: string): string => JSON.stringify(text);

/** The text a pattern matched, cut for a message. */
function matched(text: string, pattern: RegExp): string | undefined {
  const found = pattern.exec(text);
  if (!found) return undefined;
  const phrase = found[0].trim();
  return phrase.length > 40 ? `${phrase.slice(0, 37)}...` : phrase;
}

/** The first of `patterns` that `text` matches, as the matched text. */
function firstMatch(text: string, patterns: readonly RegExp[]): string | undefined {
  for (const pattern of patterns) {
    const phrase = matched(text, pattern);
    if (phrase !== undefined) return phrase;
  }
  return undefined;
}

function scriptOf(text: string): string {
  return SCRIPTS.find((script) => new RegExp(`\\p{Script=${script}}`, "u").test(text)) ?? "non-Latin";
}

function givesExample(schema: Schema): boolean {
  return (typeof schema.description === "string" && EXAMPLE_MARKER.test(schema.description)) ||
    (Array.isArray(schema.examples) && schema.examples.length > 0);
}

function typesOf(schema: Schema): string[] {
  if (typeof schema.type === "string") return [schema.type];
  return Array.isArray(schema.type) ? schema.type.filter((t): t is string => typeof t === "string") : [];
}

function isObjectSchema(schema: Schema): boolean {
  const types = typesOf(schema);
  if (types.length > 0) return types.includes("object");
  return isRecord(schema.properties) || isRecord(schema.patternProperties);
}

/** The values are spelled out by the schema itself (`enum`, `const`, or branches that are all `const`s). */
function hasClosedSet(schema: Schema): boolean {
  if (Array.isArray(schema.enum) || "const" in schema) return true;
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key];
    if (
      Array.isArray(branches) && branches.length > 0 && branches.every((b) => isRecord(b) && hasClosedSet(b))
    ) {
      return true;
    }
  }
  return isRecord(schema.items) && hasClosedSet(schema.items);
}

/** One property of an object schema, anywhere in a tool's schema. */
interface PropertyAt {
  /** Where it is, as an argument path: `path`, `env[].name`, `anyOf[0].mode`, `$defs.point.x`. */
  readonly path: string;
  readonly schema: Schema;
  readonly optional: boolean;
  /** An enclosing property's description already gives an example of the whole value. */
  readonly exampled: boolean;
}

/** One object schema, anywhere in a tool's schema (`""` is the arguments object itself). */
interface ObjectAt {
  readonly path: string;
  readonly schema: Schema;
}

const join = (path: string, name: string): string => path === "" ? name : `${path}.${name}`;

/**
 * Every object schema and every property of a tool's schema: through properties, patternProperties,
 * additionalProperties, items, prefixItems, additionalItems, anyOf/oneOf/allOf, not, if/then/else, $defs,
 * definitions and dependentSchemas.
 */
function walkSchema(root: Schema): { objects: ObjectAt[]; properties: PropertyAt[] } {
  const objects: ObjectAt[] = [];
  const properties: PropertyAt[] = [];
  const visit = (node: unknown, path: string, exampled: boolean, isRoot = false): void => {
    if (!isRecord(node)) return;
    // The root is the arguments object whatever it declares: a schema of `{}` takes any arguments at all.
    if (isRoot || isObjectSchema(node)) objects.push({ path, schema: node });
    const required = Array.isArray(node.required) ? node.required : [];
    if (isRecord(node.properties)) {
      for (const [name, child] of Object.entries(node.properties)) {
        if (!isRecord(child)) continue;
        const at = join(path, name);
        properties.push({ path: at, schema: child, optional: !required.includes(name), exampled });
        visit(child, at, exampled || givesExample(child));
      }
    }
    const sub = (child: unknown, at: string) => visit(child, at, exampled);
    if (isRecord(node.patternProperties)) {
      for (const [pattern, child] of Object.entries(node.patternProperties)) {
        sub(child, join(path, `/${pattern}/`));
      }
    }
    sub(node.additionalProperties, join(path, "*"));
    if (Array.isArray(node.items)) node.items.forEach((child, i) => sub(child, `${path}[${i}]`));
    else sub(node.items, `${path}[]`);
    if (Array.isArray(node.prefixItems)) node.prefixItems.forEach((child, i) => sub(child, `${path}[${i}]`));
    sub(node.additionalItems, `${path}[]`);
    for (const key of ["anyOf", "oneOf", "allOf"] as const) {
      const branches = node[key];
      if (Array.isArray(branches)) branches.forEach((child, i) => sub(child, join(path, `${key}[${i}]`)));
    }
    for (const key of ["not", "if", "then", "else"] as const) sub(node[key], join(path, key));
    for (const key of ["$defs", "definitions", "dependentSchemas"] as const) {
      const defs = node[key];
      if (isRecord(defs)) {
        for (const [name, child] of Object.entries(defs)) sub(child, join(path, `${key}.${name}`));
      }
    }
  };
  visit(root, "", false, true);
  return { objects, properties };
}

function objectLabel(path: string): string {
  return path === "" ? "the arguments object" : `object ${quote(path)}`;
}

/** Every piece of model-facing text of a tool: its description, and each description, title and property name. */
function textsOf(tool: LintedTool): Array<[where: string, text: string]> {
  const texts: Array<[string, string]> = [];
  if (tool.description !== undefined) texts.push(["description", tool.description]);
  if (tool.schema === undefined) return texts;
  const { objects, properties } = walkSchema(tool.schema);
  for (const { path, schema } of objects) {
    if (path === "") {
      for (const key of ["description", "title"] as const) {
        if (typeof schema[key] === "string") texts.push([`schema ${key}`, schema[key] as string]);
      }
    }
  }
  for (const { path, schema } of properties) {
    texts.push([`argument name ${quote(path)}`, path]);
    for (const key of ["description", "title"] as const) {
      if (typeof schema[key] === "string") texts.push([`argument ${quote(path)}`, schema[key] as string]);
    }
  }
  return texts;
}

function sentencesOf(text: string): string[] {
  const masked = text.trim().replace(ABBREVIATIONS, (abbreviation) => abbreviation.replaceAll(".", "\u00b7"));
  return masked.split(/(?<=[.!?]["')\]]*)\s+(?=\S)|\n+/).filter((part) => part.trim() !== "");
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

// --- the rules ------------------------------------------------------------------------------------------------------

const SEED_RULES = "tool-design-rules.md";
const SEED_CHECKLIST = "tool-envelope-contract.md, resilience checklist";

/**
 * The lint's rules, in the order findings are printed for each tool. (`concurrent` without `readOnly` is no
 * rule here: the loader refuses that manifest, and the lint exits 1 with its error.)
 *
 * @example
 * ```ts
 * import { LINT_RULES } from "./lint.ts";
 * LINT_RULES.map((rule) => rule.name).includes("additional-properties-false"); // true
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

// --- running it -----------------------------------------------------------------------------------------------------

/**
 * Lints tools against every rule: the findings, by tool, then by rule in {@linkcode LINT_RULES} order.
 *
 * @example
 * ```ts
 * import { lintTools } from "./lint.ts";
 * const findings = lintTools([{ index: 0, name: "helper", description: "This tool reads files." }]);
 * findings.map((f) => f.rule); // ["name-meaningful", "description-verb-first", "additional-properties-false"]
 * ```
 */
export function lintTools(tools: readonly LintedTool[]): LintFinding[] {
  const context: LintContext = { names: tools.map((tool) => tool.name) };
  return tools.flatMap((tool) =>
    LINT_RULES.flatMap((rule) =>
      rule.find(tool, context).map((message) => ({
        index: tool.index,
        tool: tool.name,
        rule: rule.name,
        message,
      }))
    )
  );
}

/**
 * One finding as one line, in the loader's `tool[i] "NAME"` style: `tool[i] "NAME": rule-name: message`.
 *
 * @example
 * ```ts
 * import { formatFinding } from "./lint.ts";
 * formatFinding({ index: 0, tool: "t1", rule: "name-meaningful", message: "too short" });
 * // 'tool[0] "t1": name-meaningful: too short'
 * ```
 */
export function formatFinding(finding: LintFinding): string {
  const where = finding.server === undefined
    ? `tool[${finding.index}] ${quote(finding.tool)}`
    : `mcpServers ${quote(finding.server)} tool ${quote(finding.tool)}`;
  return `${where}: ${finding.rule}: ${finding.message}`;
}

/**
 * The MCP servers' pinned tools held to the one rule that concerns text the user did not write: invisible or
 * control characters (what a server says to the model that a person reading it does not see). The other rules are
 * advice to a manifest's author, which an upstream tool's is not.
 *
 * @example
 * ```ts
 * import { formatFinding, lintUpstream } from "./lint.ts";
 * const findings = lintUpstream({ fs: { read: { name: "read", description: "Reads.\u202E" } } });
 * formatFinding(findings[0]);
 * // 'mcpServers "fs" tool "read": text-visible: the description carries invisible or control characters (U+202E)'
 * ```
 */
export function lintUpstream(pins: PinSet): LintFinding[] {
  const rule = LINT_RULES.find((r) => r.name === "text-visible")!;
  return Object.entries(pins).flatMap(([server, tools]) =>
    Object.values(tools).flatMap((definition, index) => {
      const tool: LintedTool = {
        index,
        name: definition.name,
        description: typeof definition.description === "string" ? definition.description : undefined,
        schema: isRecord(definition.inputSchema) ? definition.inputSchema : undefined,
      };
      const extra = typeof definition.title === "string" ? invisibleIn("the title", definition.title) : [];
      return [...extra, ...rule.find(tool, { names: [] })].map((message) => ({
        index,
        tool: definition.name,
        rule: rule.name,
        message,
        server,
      }));
    })
  );
}

/** One message when `text` carries invisible or control characters, naming where and which. */
function invisibleIn(where: string, text: string): string[] {
  const found = invisibleCharacters(text);
  return found.length === 0 ? [] : [`${where} carries invisible or control characters (${found.join(", ")})`];
}

/**
 * The closing line of a lint run: how many findings in how many of the tools.
 *
 * @example
 * ```ts
 * import { lintSummary } from "./lint.ts";
 * lintSummary("tools.json", [], 12); // "tools.json: no findings, 12 tools"
 * ```
 */
export function lintSummary(path: string, findings: readonly LintFinding[], toolCount: number): string {
  const tools = (n: number) => `${n} tool${n === 1 ? "" : "s"}`;
  if (findings.length === 0) return `${path}: no findings, ${tools(toolCount)}`;
  const flagged = new Set(findings.map((finding) => `${finding.server ?? ""}/${finding.index}`)).size;
  const count = `${findings.length} finding${findings.length === 1 ? "" : "s"}`;
  return `${path}: ${count} in ${flagged} of ${tools(toolCount)}`;
}
