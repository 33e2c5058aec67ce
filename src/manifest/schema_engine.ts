/**
 * The JSON Schema engine toolgate loads only when it must check or compile a schema: ajv with its formats, and
 * RE2 for every regular expression a model's arguments meet. Loading it costs a start-up tens of milliseconds, so
 * `schema.ts` imports it on demand (`loadSchemaEngine`), and a manifest whose schemas were already checked skips it.
 *
 * @module
 */
import { Ajv } from "npm:ajv@8.17.1";
import { Ajv2019 } from "npm:ajv@8.17.1/dist/2019.js";
import { Ajv2020 } from "npm:ajv@8.17.1/dist/2020.js";
import addFormats from "npm:ajv-formats@3.0.1";
import { isRecord } from "../contract.ts";
import { linearPatternProblem, linearRegExp } from "./linear_regexp.ts";

/** A new ajv of the given class, set up the way toolgate checks arguments. */
export function newAjv<T extends Ajv>(Kind: new (options: object) => T): T {
  // ajv's own coercion stays off: the preflight coerces, so what ajv sees is what the tool gets.
  const ajv = new Kind({
    allErrors: true,
    // verbose: errors carry their parentSchema, which the preflight describes to the model as `expected`.
    verbose: true,
    strict: false,
    logger: false,
    coerceTypes: false,
    useDefaults: false,
    // ajv's optimizer passes over the generated code cost more than half of each compile (1,000 schemas: ~2.2 s
    // against ~1.0 s) and buy no measurable validation speed. `pattern` and `patternProperties` go to RE2.
    code: { optimize: false, regExp: linearRegExp },
  });
  (addFormats as unknown as (ajv: T) => void)(ajv);
  ajv.addFormat("url", { type: "string", validate: (text: string) => linearUrl().test(text) });
  return ajv;
}

/**
 * ajv-formats' `url` (dperini's regular expression) takes time in the square of its input (a ReDoS checker,
 * recheck, finds `"ftp://172.30.3.56" + "4.1.6.7:155".repeat(n)`; 20,000 characters of `http://::::...` take
 * 0.3 s, a megabyte most of an hour). The same language, written for RE2: its three lookaheads, which keep private
 * IPv4 addresses out (10/8, 127/8, 169.254/16, 192.168/16, 172.16/12), spelled out as the octets that remain.
 * Every other format of ajv-formats is linear or bounded under backtracking (recheck: "safe") and stays as it is.
 */
const OCTET = "(?:1?\\d{1,2}|2[0-4]\\d|25[0-5])";
const LAST_OCTET = "(?:[1-9]\\d?|1\\d\\d|2[0-4]\\d|25[0-4])";
/** A first octet of ajv-formats' (1-223) but for 10, 127 and the three whose private ranges depend on the second. */
const PUBLIC_FIRST =
  "(?:[1-9]|1[1-9]|[2-9]\\d|1[013-58]\\d|12[0-689]|16[0-8]|17[013-9]|19[013-9]|2[01]\\d|22[0-3])";
const PUBLIC_IPV4 = "(?:" + [
  `${PUBLIC_FIRST}(?:\\.${OCTET}){2}`,
  `169\\.(?:\\d{1,2}|1\\d\\d|2[0-4]\\d|25[0-35])\\.${OCTET}`,
  `192\\.(?:\\d{1,2}|1[0-57-9]\\d|16[0-79]|2[0-4]\\d|25[0-5])\\.${OCTET}`,
  `172\\.(?:\\d|0\\d|1[0-5]|3[2-9]|[4-9]\\d|1\\d\\d|2[0-4]\\d|25[0-5])\\.${OCTET}`,
].join("|") + `)\\.${LAST_OCTET}`;
const HOST_CHAR = "[a-z0-9\\u{00a1}-\\u{ffff}]";
const URL_PATTERN = "^(?:https?|ftp):\\/\\/(?:\\S+(?::\\S*)?@)?(?:" + PUBLIC_IPV4 +
  `|(?:(?:${HOST_CHAR}+-)*${HOST_CHAR}+)(?:\\.(?:${HOST_CHAR}+-)*${HOST_CHAR}+)*` +
  "(?:\\.(?:[a-z\\u{00a1}-\\u{ffff}]{2,})))(?::\\d{2,5})?(?:\\/[^\\s]*)?$";
let url: ReturnType<typeof linearRegExp> | undefined;
/** Compiled at its first use: most manifests never name the format, and every start would pay for it. */
const linearUrl = () => url ??= linearRegExp(URL_PATTERN, "iu");

/** The patterns of a schema, at any depth: each `pattern` string and each key of a `patternProperties`. */
function schemaPatterns(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) schemaPatterns(item, out);
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (key === "pattern" && typeof item === "string") out.push(item);
      if (key === "patternProperties" && isRecord(item)) out.push(...Object.keys(item));
      schemaPatterns(item, out);
    }
  }
  return out;
}

/**
 * Why each pattern of a schema cannot be matched (in linear time, or at all): for a warning when a manifest is
 * loaded, since schemas are compiled only when a tool is first called. Empty when every pattern is fine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { patternProblems } from "./schema_engine.ts";
 * assert.equal(patternProblems({ properties: { pin: { type: "string", pattern: "^(?=.*\\d)" } } }).length, 1);
 * ```
 */
export function patternProblems(schema: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const pattern of new Set(schemaPatterns(schema))) {
    const problem = linearPatternProblem(pattern);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/** ajv's classes, one per draft. */
export const DRAFTS = { draft7: Ajv, draft2019: Ajv2019, draft2020: Ajv2020 } as const;
