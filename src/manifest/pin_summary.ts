/**
 * What changed in an MCP tool's definition since the user pinned it, said in a few words for the model and the
 * person (`its input schema (new argument: mode) changed`): the answer to a call of a withheld tool, and the line
 * a run prints of it. `toolgate trust` shows the full change, field by field.
 *
 * Not here: the pins and the field-by-field change (`pins.ts`).
 *
 * @module
 */
import { showInvisible } from "../base/invisible.ts";
import { isRecord } from "../contract.ts";
import { PINNED_FIELDS, samePin, type ToolDefinition } from "./pins.ts";

const FIELD_WORDS: Record<(typeof PINNED_FIELDS)[number], string> = {
  title: "its title",
  description: "its description",
  inputSchema: "its input schema",
  outputSchema: "its output schema",
  annotations: "its annotations",
};

/**
 * What changed between `pinned` and `current`, in words; `undefined` when nothing did. A tool without a pin "has not
 * been trusted yet".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinSummary } from "./pin_summary.ts";
 * const pinned = { name: "t", inputSchema: { type: "object", properties: { a: {} } } };
 * const current = { name: "t", inputSchema: { type: "object", properties: { a: {}, mode: {} } } };
 * assert.equal(pinSummary(pinned, current), "its input schema (new argument: mode) changed since it was trusted");
 * assert.equal(pinSummary(undefined, current), "it has not been trusted yet");
 * ```
 */
export function pinSummary(pinned: ToolDefinition | undefined, current: ToolDefinition): string | undefined {
  if (pinned === undefined) return "it has not been trusted yet";
  if (samePin(current, pinned)) return undefined;
  const parts: string[] = [];
  for (const field of PINNED_FIELDS) {
    if (samePin({ name: "", [field]: pinned[field] }, { name: "", [field]: current[field] })) continue;
    const detail = field === "inputSchema" ? argumentChanges(pinned.inputSchema, current.inputSchema) : "";
    parts.push(detail === "" ? FIELD_WORDS[field] : `${FIELD_WORDS[field]} (${detail})`);
  }
  const said = parts.length <= 1 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
  return `${said} changed since it was trusted`;
}

/** The top-level arguments added, removed and changed between two input schemas, in words ("" when none). */
function argumentChanges(before: unknown, after: unknown): string {
  const props = (schema: unknown): Record<string, unknown> =>
    isRecord(schema) && isRecord(schema.properties) ? schema.properties : {};
  const old = props(before);
  const now = props(after);
  const added = Object.keys(now).filter((name) => !Object.hasOwn(old, name));
  const removed = Object.keys(old).filter((name) => !Object.hasOwn(now, name));
  const changed = Object.keys(now).filter((name) =>
    Object.hasOwn(old, name) && !samePin({ name, inputSchema: old[name] }, { name, inputSchema: now[name] })
  );
  const list = (words: string, names: string[]) =>
    names.length === 0
      ? []
      : [`${words}${names.length > 1 ? "s" : ""}: ${names.slice(0, 5).map(showInvisible).join(", ")}`];
  return [
    ...list("new argument", added),
    ...list("removed argument", removed),
    ...list("changed argument", changed),
  ].join("; ");
}
