/**
 * The approval question as MCP asks it of a person: the call's lines, `Run TOOL?`, and one `always` box whose
 * words say how far it reaches (a session's later calls, or a stateless client's). Both revisions ask with it:
 * an `elicitation/create` request in a session (`client_asks.ts`), an input-required round without one
 * (`input_rounds.ts`).
 *
 * Not here: what the answer means to the policy (src/policy/policy.ts), how it is asked on the wire.
 *
 * @module
 */

/**
 * The form's message and schema for `question`, its `always` box reaching `reach` (`in this session`,
 * `from this client`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { approvalForm } from "./approval_form.ts";
 * const form = approvalForm({ tool: "fs_write_file", lines: ["writes notes.txt"] }, "in this session");
 * assert.equal(form.message, "writes notes.txt\n\nRun fs_write_file?");
 * assert.equal(
 *   form.requestedSchema.properties.always.title,
 *   "Allow every later call of fs_write_file in this session",
 * );
 * ```
 */
export function approvalForm(question: { tool: string; lines: readonly string[] }, reach: string): {
  message: string;
  requestedSchema: {
    type: "object";
    properties: { always: { type: "boolean"; title: string; default: boolean } };
  };
} {
  return {
    message: `${question.lines.join("\n")}\n\nRun ${question.tool}?`,
    requestedSchema: {
      type: "object",
      properties: {
        always: {
          type: "boolean",
          title: `Allow every later call of ${question.tool} ${reach}`,
          default: false,
        },
      },
    },
  };
}
