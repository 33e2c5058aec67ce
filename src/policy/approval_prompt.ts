/**
 * The text of an approval question, built so that a person can trust it: the tool's name and why it needs
 * approval; then the fields that carry the risk (`argv`, `path`, `url`, `cwd`, `command`, `shell`, and any property
 * the tool's schema marks with `"x-toolgate-risk": true`), first, whole and each on its own lines, long ones folded
 * with their length; then the other arguments, which may be cut (saying how much). Every value is shown as JSON
 * with control and invisible characters (ESC, CR, DEL, C1, bidi overrides, zero-width characters) written as
 * escapes, so that nothing the model sends can move the cursor, rewrite a line or push a risky field out of view.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { redactDeep } from "../state/redact.ts";
import { visible } from "../base/text.ts";

/**
 * Argument names that carry the risk of a call, whatever the tool: shown first and whole.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RISK_FIELDS } from "./approval_prompt.ts";
 * assert.ok(RISK_FIELDS.includes("argv"));
 * ```
 */
export const RISK_FIELDS: readonly string[] = Object.freeze([
  "argv",
  "path",
  "url",
  "cwd",
  "command",
  "shell",
]);

/**
 * The schema annotation that marks a property as risky: `"x-toolgate-risk": true` on the property's schema.
 *
 * @example
 * ```ts
 * import { RISK_ANNOTATION } from "./approval_prompt.ts";
 * const schema = { type: "object", properties: { target: { type: "string", [RISK_ANNOTATION]: true } } };
 * ```
 */
export const RISK_ANNOTATION = "x-toolgate-risk";

/** The most characters of the other arguments shown (they are cut past it, saying so). */
export const OTHER_ARGS_LIMIT = 300;

/** The width lines are folded at when the caller does not say. */
export const DEFAULT_WIDTH = 100;

/** The narrowest folding that still leaves room for a value beside its indent. */
const MIN_WIDTH = 40;

/**
 * The arguments a tool's call shows first: the top-level properties its schema marks as risky or that bear a
 * name of {@linkcode RISK_FIELDS}, in the schema's order, then any other present argument of such a name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { riskyFields } from "./approval_prompt.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const exec = loaded.manifest.byName.get("exec")!;
 * assert.deepEqual(riskyFields(exec, { env: [], argv: ["ls"], cwd: "." }), ["argv", "cwd", "env"]);
 * ```
 */
export function riskyFields(tool: ToolSpec, args: Readonly<Record<string, unknown>>): string[] {
  const fields: string[] = [];
  const properties = isRecord(tool.schema?.properties) ? tool.schema.properties : {};
  for (const [name, property] of Object.entries(properties)) {
    const marked = isRecord(property) && property[RISK_ANNOTATION] === true;
    if ((marked || RISK_FIELDS.includes(name)) && Object.hasOwn(args, name)) fields.push(name);
  }
  for (const name of RISK_FIELDS) {
    if (Object.hasOwn(args, name) && !fields.includes(name)) fields.push(name);
  }
  return fields;
}

/** A value as one line of JSON with every control or invisible character made visible. */
export function showValue(value: unknown): string {
  return visible(JSON.stringify(value) ?? "null");
}

/** The units a line may be folded between: whole escapes and whole code points. */
function units(text: string): string[] {
  return text.match(/\\u\{[0-9a-f]+\}|\\u[0-9a-fA-F]{4}|\\.|[\s\S]/gu) ?? [];
}

/**
 * Folds `text` into lines of at most `width` characters, never inside an escape or a surrogate pair.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fold } from "./approval_prompt.ts";
 * assert.deepEqual(fold("abcdefgh", 3), ["abc", "def", "gh"]);
 * ```
 */
export function fold(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const unit of units(text)) {
    if (line.length > 0 && line.length + unit.length > width) {
      lines.push(line);
      line = "";
    }
    line += unit;
  }
  if (line.length > 0 || lines.length === 0) lines.push(line);
  return lines;
}

/** "1,234" */
function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** How a question is written. */
export interface PromptOptions {
  /** Masks secrets; applied to every string (keys too) of the arguments before anything is shown. */
  readonly redact?: (text: string) => string;
  /** Lines are folded to fit this many columns (default {@linkcode DEFAULT_WIDTH}). */
  readonly width?: number;
  /** The most characters of the other arguments shown (default {@linkcode OTHER_ARGS_LIMIT}). */
  readonly otherLimit?: number;
}

/**
 * The lines of an approval question, without the question itself ("Run it?"): what the call would do, the risky
 * fields first and whole, then the rest of the arguments.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { approvalLines } from "./approval_prompt.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const exec = loaded.manifest.byName.get("exec")!;
 * const args = { env: [{ name: "A", value: "x".repeat(5000) }], argv: ["rm", "-rf", "."] };
 * const lines = approvalLines(exec, args, "it runs programs");
 * assert.deepEqual(lines.slice(0, 3), [
 *   "toolgate: the model asks to run exec: it runs programs.",
 *   '  argv: ["rm","-rf","."]',
 *   "  env (5,025 characters, in 53 lines):", // a risky field is shown whole
 * ]);
 * assert.equal(lines.at(-1), "  (shown whole above: env (5,025 characters))");
 * ```
 */
export function approvalLines(
  tool: ToolSpec,
  args: Readonly<Record<string, unknown>>,
  reason: string,
  options: PromptOptions = {},
): string[] {
  const width = Math.max(MIN_WIDTH, Math.floor(options.width ?? DEFAULT_WIDTH));
  const redact = options.redact;
  const shown = (value: unknown) => redact ? redactDeep(value, redact) : value;
  const lines = [`toolgate: the model asks to run ${tool.name}: ${visible(reason)}.`];
  const risky = riskyFields(tool, args);
  const folded: string[] = [];
  for (const name of risky) {
    // The name comes from the model when the schema allows any property: shown as visibly as the value.
    const label = `  ${visible(name)}: `;
    const text = showValue(shown(args[name]));
    if (label.length + text.length <= width) {
      lines.push(label + text);
      continue;
    }
    const parts = fold(text, width - 4);
    lines.push(`  ${visible(name)} (${count(text.length)} characters, in ${parts.length} lines):`);
    for (const part of parts) lines.push(`    ${part}`);
    folded.push(`${visible(name)} (${count(text.length)} characters)`);
  }
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (!risky.includes(key)) rest[redact ? redact(key) : key] = shown(value);
  }
  if (Object.keys(rest).length > 0) {
    const text = showValue(rest);
    const limit = Math.max(0, Math.floor(options.otherLimit ?? OTHER_ARGS_LIMIT));
    if (text.length <= limit) {
      lines.push(risky.length > 0 ? "  other arguments:" : "  arguments:");
      for (const part of fold(text, width - 4)) lines.push(`    ${part}`);
    } else {
      // Cut between whole escapes, so that what is shown stays readable.
      let cut = "";
      for (const unit of units(text)) {
        if (cut.length + unit.length > limit) break;
        cut += unit;
      }
      const label = risky.length > 0 ? "other arguments" : "arguments";
      lines.push(
        `  ${label} (the first ${count(cut.length)} of ${count(text.length)} characters; ` +
          `${count(text.length - cut.length)} more not shown):`,
      );
      for (const part of fold(cut + "…", width - 4)) lines.push(`    ${part}`);
    }
  }
  // A value long enough to fill the screen scrolls what came before it away: say again, last, what was shown.
  if (folded.length > 0) lines.push(`  (shown whole above: ${folded.join(", ")})`);
  return lines;
}
