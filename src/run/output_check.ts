/**
 * A success checked against its tool's declared `outputSchema`, for every front end that shows a result to a
 * model or a person: `serve` (MCP), `call` and the agent loop. A result that breaks the tool's own declaration is
 * withheld as an `execution_error` the model can act on, never passed on as if it were what the tool promised.
 *
 * Not here: running the call (`executor.ts`), the MCP result mapping (`mcp/results.ts`).
 *
 * @module
 */
import { type Envelope, failure, truncateForModel } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { describeAjvErrors, type SchemaCompiler } from "../manifest/schema.ts";

/** The most characters of ajv's findings a mismatch's message carries (a hostile result can make them long). */
export const MISMATCH_DETAIL_LIMIT = 1000;

/**
 * A success checked against the tool's declared `outputSchema` (the schema engine is loaded when needed). A
 * result that does not match is withheld: the answer is an `execution_error` failure that names what is wrong and
 * invites no retry (the tool ran, and will answer the same way). A failure, or a tool without an `outputSchema`,
 * passes as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkOutput } from "./output_check.ts";
 * import { success } from "../contract.ts";
 * import { SchemaCompiler } from "../manifest/schema.ts";
 * import { validateManifest } from "../manifest/manifest.ts";
 * const loaded = validateManifest({
 *   tools: [{
 *     name: "count",
 *     command: ["./tools/bin/count"],
 *     outputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
 *   }],
 * }, "/srv/tools.json", { schemasChecked: true });
 * if (loaded.ok) {
 *   const checked = await checkOutput(loaded.manifest.tools[0], success({ n: "many" }), new SchemaCompiler());
 *   assert.equal(checked.ok, false); // "/n must be integer"
 * }
 * ```
 */
export async function checkOutput(
  tool: ToolSpec,
  envelope: Envelope,
  schemas: SchemaCompiler,
): Promise<Envelope> {
  if (!envelope.ok || tool.outputSchema === undefined) return envelope;
  const schema = tool.outputSchema as Record<string, unknown>;
  await schemas.ready(schema);
  const compiled = schemas.compile(schema);
  const problem = !compiled.ok
    ? `its outputSchema does not compile: ${compiled.reason}`
    : compiled.validate(envelope.result)
    ? undefined
    : `it does not match the outputSchema the tool declares: ${describeAjvErrors(compiled.validate.errors)}`;
  if (problem === undefined) return envelope;
  const acted = tool.readOnly ? "" : " The tool may have acted: check before calling it again.";
  return failure(
    "execution_error",
    `The tool ran, but its result is withheld: ${truncateForModel(problem, MISMATCH_DETAIL_LIMIT)}.${acted}`,
    { tool: tool.name, retryable: false, metadata: { invalid_result: true } },
  );
}
