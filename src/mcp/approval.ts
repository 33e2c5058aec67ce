/**
 * The MCP server's approval policy: a host cannot be asked on a terminal, so tools that are not read-only run only
 * when the operator approved them when starting the server (`--yes`, or by name with `--allow-tools`).
 *
 * @module
 */
import { failure, type FailureEnvelope } from "../contract.ts";
import type { ToolSpec } from "../manifest.ts";

/** What the operator approved when starting the server. */
export interface ApprovalPolicy {
  /** `--yes`: every tool may run. */
  readonly yes: boolean;
  /** `--allow-tools`: these tools may run even though they are not read-only. */
  readonly allowTools: ReadonlySet<string>;
}

/**
 * The `rejected` envelope for a call the policy does not allow, or `undefined` when the tool may run.
 *
 * @example
 * ```ts
 * import { refusal } from "./approval.ts";
 * // refusal(tool, { yes: false, allowTools: new Set(["fs_write_file"]) })
 * // -> undefined for a read-only tool or fs_write_file, a `rejected` envelope for any other tool
 * ```
 */
export function refusal(tool: ToolSpec, policy: ApprovalPolicy): FailureEnvelope | undefined {
  if (tool.readOnly || policy.yes || policy.allowTools.has(tool.name)) return undefined;
  const name = JSON.stringify(tool.name);
  return failure(
    "rejected",
    `The tool ${name} is not read-only and this MCP server was not started with approval for it; ` +
      `the user can restart toolgate serve with --allow-tools ${tool.name} (or --yes for every tool) to allow it.`,
    { tool: tool.name },
  );
}
