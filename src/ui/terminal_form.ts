/**
 * A tool's question to the user (an MCP elicitation form) asked on the terminal: the tool's message, then one
 * line per field (its title or name, its description, its choices and its default), the typed values checked
 * against the field's type and choices. An empty line takes the default; `!` on any line declines the form; the
 * end of input cancels it. What the tool wrote is shown with its control characters neutralized, and its secrets
 * masked, like every question. A page the user is sent to (URL-mode elicitation) is shown whole, its host apart, and
 * never opened by toolgate: the person says whether they went there.
 *
 * @module
 */
import type { ReadLine } from "../policy/ask.ts";
import { isRecord } from "../contract.ts";
import { neutralizeControls } from "../base/terminal.ts";
import type { ElicitAnswer, UrlQuestion } from "../run/tool_questions.ts";

/** After this many values that do not fit a field, the form is cancelled. */
const MAX_TRIES = 3;

/** A choice of an enum field: the value the tool gets, and the words shown. */
interface Choice {
  readonly value: string;
  readonly title: string;
}

/** The choices of a single-select (`enum`, `enum` + `enumNames`, `oneOf` of `const`/`title`) or multi-select field. */
function choicesOf(schema: Readonly<Record<string, unknown>>): Choice[] | undefined {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => ({
      value: String(value),
      title: typeof names[i] === "string" ? names[i] : String(value),
    }));
  }
  const titled = Array.isArray(schema.oneOf)
    ? schema.oneOf
    : Array.isArray(schema.anyOf)
    ? schema.anyOf
    : undefined;
  if (titled === undefined) return undefined;
  return titled.filter(isRecord).map((option) => ({
    value: String(option.const),
    title: typeof option.title === "string" ? option.title : String(option.const),
  }));
}

/** The typed text as the field's value, or why it is not one. */
function valueOf(
  text: string,
  schema: Readonly<Record<string, unknown>>,
): { ok: true; value: unknown } | { ok: false; reason: string } {
  const type = schema.type;
  if (type === "array") {
    const items = isRecord(schema.items) ? schema.items : {};
    const choices = choicesOf(items);
    const picked = text.split(",").map((part) => part.trim()).filter((part) => part !== "");
    const values: string[] = [];
    for (const part of picked) {
      const choice = choices === undefined ? { value: part } : pick(part, choices);
      if (choice === undefined) {
        return { ok: false, reason: `${JSON.stringify(part)} is not one of the choices` };
      }
      values.push(choice.value);
    }
    return { ok: true, value: values };
  }
  if (type === "boolean") {
    const answer = text.toLowerCase();
    if (["y", "yes", "true"].includes(answer)) return { ok: true, value: true };
    if (["n", "no", "false"].includes(answer)) return { ok: true, value: false };
    return { ok: false, reason: "answer y or n" };
  }
  if (type === "integer" || type === "number") {
    const value = Number(text);
    if (text === "" || !Number.isFinite(value) || (type === "integer" && !Number.isInteger(value))) {
      return { ok: false, reason: `type ${type === "integer" ? "a whole number" : "a number"}` };
    }
    return { ok: true, value };
  }
  const choices = choicesOf(schema);
  if (choices !== undefined) {
    const choice = pick(text, choices);
    return choice === undefined
      ? { ok: false, reason: "type one of the choices (its number or its value)" }
      : {
        ok: true,
        value: choice.value,
      };
  }
  return { ok: true, value: text };
}

/** A choice by its number (from 1), its value or its title. */
function pick(text: string, choices: readonly Choice[]): Choice | undefined {
  const index = Number(text);
  if (Number.isInteger(index) && index >= 1 && index <= choices.length) return choices[index - 1];
  return choices.find((choice) => choice.value === text || choice.title === text);
}

/** The line that asks for one field. */
function prompt(name: string, schema: Readonly<Record<string, unknown>>, required: boolean): string {
  const safe = (text: unknown) => neutralizeControls(String(text)).replace(/\s+/g, " ");
  const title = typeof schema.title === "string" ? schema.title : name;
  const lines = [`  ${safe(title)}${required ? " (required)" : ""}`];
  if (typeof schema.description === "string") lines.push(`    ${safe(schema.description)}`);
  const choices = choicesOf(schema.type === "array" && isRecord(schema.items) ? schema.items : schema);
  if (choices !== undefined) {
    lines.push(`    choices: ${choices.map((choice, i) => `${i + 1}) ${safe(choice.title)}`).join("  ")}`);
    if (schema.type === "array") lines.push("    (several: separate them with commas)");
  }
  const fallback = "default" in schema ? ` [${safe(JSON.stringify(schema.default))}]` : "";
  return `${lines.join("\n")}\n  ${safe(name)}${fallback}: `;
}

/**
 * Asks a form on the terminal and returns the person's answer: `accept` with the values typed (or defaulted),
 * `decline` when they typed `!`, `cancel` when input ended or no value fit in three tries.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { askForm } from "./terminal_form.ts";
 * const lines = ["", "2"];
 * const answer = await askForm(
 *   { message: "Deploy?", requestedSchema: { type: "object", properties: {
 *     who: { type: "string", default: "me" },
 *     target: { type: "string", enum: ["staging", "prod"] },
 *   } } },
 *   () => Promise.resolve(lines.shift() ?? null),
 *   () => Promise.resolve(),
 * );
 * assert.deepEqual(answer, { action: "accept", content: { who: "me", target: "prod" } });
 * ```
 */
export async function askForm(
  question: { readonly message: string; readonly requestedSchema: Readonly<Record<string, unknown>> },
  readLine: ReadLine,
  write: (text: string) => Promise<void>,
  tool?: string,
): Promise<ElicitAnswer> {
  const schema = question.requestedSchema;
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const who = tool === undefined ? "A tool" : `The tool ${neutralizeControls(tool)}`;
  await write(
    `toolgate: ${who} asks you (an empty line takes the default, ! declines the form):\n  ${
      neutralizeControls(question.message).replaceAll("\n", "\n  ")
    }\n`,
  );
  const content: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(properties)) {
    const field = isRecord(raw) ? raw : {};
    let tries = 0;
    let ask = prompt(name, field, required.has(name));
    while (true) {
      const line = await readLine(ask);
      if (line === null) return { action: "cancel" };
      const text = line.trim();
      if (text === "!") return { action: "decline" };
      if (text === "") {
        if ("default" in field) content[name] = field.default;
        else if (required.has(name)) {
          if (++tries >= MAX_TRIES) return { action: "cancel" };
          ask = `  ${neutralizeControls(name)} is required: `;
          continue;
        }
        break;
      }
      const value = valueOf(text, field);
      if (value.ok) {
        content[name] = value.value;
        break;
      }
      if (++tries >= MAX_TRIES) return { action: "cancel" };
      ask = `  ${value.reason}: `;
    }
  }
  return { action: "accept", content };
}

/**
 * Shows a page the user is asked to open (MCP URL-mode elicitation), whole and with its host said apart, and asks
 * whether they opened it: `y` accepts, `n` or `!` declines, the end of input (or no fitting answer in three tries)
 * cancels. toolgate never opens the page itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { askUrl } from "./terminal_form.ts";
 * const shown: string[] = [];
 * const answer = await askUrl(
 *   { message: "Sign in", url: "https://example.com/login", elicitationId: "e1" },
 *   () => Promise.resolve("y"),
 *   (text) => Promise.resolve(void shown.push(text)),
 * );
 * assert.deepEqual(answer, { action: "accept" });
 * assert.match(shown.join(""), /https:\/\/example\.com\/login \(host example\.com\)/);
 * ```
 */
export async function askUrl(
  question: UrlQuestion,
  readLine: ReadLine,
  write: (text: string) => Promise<void>,
  tool?: string,
): Promise<ElicitAnswer> {
  const who = tool === undefined ? "A tool" : `The tool ${neutralizeControls(tool)}`;
  let host = "";
  try {
    host = new URL(question.url).host;
  } catch {
    // Shown as it is: the caller checked it is a web page.
  }
  await write(
    `toolgate: ${who} asks you to open a page in your browser (toolgate does not open it):\n  ${
      neutralizeControls(question.message).replaceAll("\n", "\n  ")
    }\n  ${neutralizeControls(question.url)} (host ${neutralizeControls(host)})\n`,
  );
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const line = await readLine("  Did you open it? [y/n] ");
    if (line === null) return { action: "cancel" };
    const text = line.trim().toLowerCase();
    if (text === "y" || text === "yes") return { action: "accept" };
    if (text === "n" || text === "no" || text === "!") return { action: "decline" };
  }
  return { action: "cancel" };
}
