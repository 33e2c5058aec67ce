/**
 * The manifest lint: the seeds' rules for tools that models call well (the four rules and the description rules of
 * tool-design-rules.md, the resilience checklist of tool-envelope-contract.md) as named rules over each tool's name,
 * description and argument schema. A rule is data (a stable name, what it checks, why) and one small function that
 * returns its findings; the patterns the heuristics look for are data too, so a new phrase is one more line.
 *
 * This module runs the rules and words their findings; the rules are in `lint_rules.ts`, the phrases they look
 * for in `lint_phrases.ts`, the walk of a schema in `lint_walk.ts`.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { PinSet } from "./pins.ts";
import { invisibleIn, LINT_RULES, type LintContext, type LintedTool } from "./lint_rules.ts";

const quote = (text: string): string => JSON.stringify(text);

/**
 * One finding: which tool, which rule, and what is wrong there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatFinding, type LintFinding } from "./lint.ts";
 * const finding: LintFinding = { index: 2, tool: "helper", rule: "name-meaningful", message: "..." };
 * assert.equal(formatFinding(finding), 'tool[2] "helper": name-meaningful: ...');
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

// --- running it -----------------------------------------------------------------------------------------------------

/**
 * Lints tools against every rule: the findings, by tool, then by rule in {@linkcode LINT_RULES} order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lintTools } from "./lint.ts";
 * const findings = lintTools([{ index: 0, name: "helper", description: "This tool reads files." }]);
 * assert.deepEqual(findings.map((f) => f.rule), ["name-meaningful", "description-verb-first", "additional-properties-false"]);
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
 * import assert from "node:assert/strict";
 * import { formatFinding } from "./lint.ts";
 * assert.equal(formatFinding({ index: 0, tool: "t1", rule: "name-meaningful", message: "too short" }), 'tool[0] "t1": name-meaningful: too short');
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
 * import assert from "node:assert/strict";
 * import { formatFinding, lintUpstream } from "./lint.ts";
 * const findings = lintUpstream({ fs: { read: { name: "read", description: "Reads.\u202E" } } });
 * assert.equal(formatFinding(findings[0]), 'mcpServers "fs" tool "read": text-visible: the description carries invisible or control characters (U+202E)');
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

/**
 * The closing line of a lint run: how many findings in how many of the tools.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lintSummary } from "./lint.ts";
 * assert.equal(lintSummary("tools.json", [], 12), "tools.json: no findings, 12 tools");
 * ```
 */
export function lintSummary(path: string, findings: readonly LintFinding[], toolCount: number): string {
  const tools = (n: number) => `${n} tool${n === 1 ? "" : "s"}`;
  if (findings.length === 0) return `${path}: no findings, ${tools(toolCount)}`;
  const flagged = new Set(findings.map((finding) => `${finding.server ?? ""}/${finding.index}`)).size;
  const count = `${findings.length} finding${findings.length === 1 ? "" : "s"}`;
  return `${path}: ${count} in ${flagged} of ${tools(toolCount)}`;
}
