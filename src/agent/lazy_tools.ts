/**
 * Tools disclosed on demand (`--lazy-tools`): the model first sees each tool as a stub (its name, a one-line
 * summary and a schema that takes anything); the first call of a stub is not run but answered with the tool's
 * full definition and a request to call again; from then on the full definition is in every request. A tool with
 * `alwaysLoad: true` is sent in full from the start.
 *
 * @module
 */
import { failure, type FailureEnvelope } from "../contract.ts";
import { type OpenAITool, toOpenAI } from "../manifest/tool_definitions.ts";
import type { Manifest, ToolSpec } from "../manifest/manifest_types.ts";
import type { ChatMessage, ToolCall } from "./messages.ts";

/** A stub's parameters: an object, anything in it (the real schema comes with the first call). */
export const STUB_PARAMETERS: Readonly<Record<string, unknown>> = Object.freeze({ type: "object" });

/** The longest summary a stub carries, in characters. */
export const SUMMARY_LIMIT = 100;

/**
 * A description's first sentence (or line), cut to {@linkcode SUMMARY_LIMIT} characters: a stub's summary.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summaryOf } from "./lazy_tools.ts";
 * assert.equal(summaryOf("Get the current time in an IANA timezone. Returns ISO 8601."), "Get the current time in an IANA timezone.");
 * assert.equal(summaryOf(undefined), undefined);
 * ```
 */
export function summaryOf(description: string | undefined): string | undefined {
  if (description === undefined) return undefined;
  const text = description.trim().split(/\r?\n/, 1)[0].trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(text)?.[0] ?? text;
  if (sentence === "") return undefined;
  return sentence.length <= SUMMARY_LIMIT ? sentence : `${sentence.slice(0, SUMMARY_LIMIT - 1).trimEnd()}…`;
}

/**
 * A tool as a stub in OpenAI's shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { validateManifest } from "../manifest/manifest.ts";
 * import { toStub } from "./lazy_tools.ts";
 * const loaded = validateManifest({ tools: [{ name: "t", description: "Do it. Carefully.", command: ["./tools/bin/t"] }] }, "/srv/tools.json");
 * assert.ok(loaded.ok);
 * assert.deepEqual(toStub(loaded.manifest.tools[0]), { type: "function", function: { name: "t", description: "Do it.", parameters: { type: "object" } } });
 * ```
 */
export function toStub(tool: ToolSpec): OpenAITool {
  const summary = summaryOf(tool.description);
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(summary === undefined ? {} : { description: summary }),
      parameters: { ...STUB_PARAMETERS },
    },
  };
}

/**
 * The names of the tools an earlier conversation called: a resumed run has already shown their definitions.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { calledTools } from "./lazy_tools.ts";
 * const call = { id: "c", type: "function" as const, function: { name: "t", arguments: "{}" } };
 * assert.deepEqual(calledTools([{ role: "assistant", content: null, tool_calls: [call] }]), new Set(["t"]));
 * ```
 */
export function calledTools(messages: readonly ChatMessage[]): Set<string> {
  const names = new Set<string>();
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const call of message.tool_calls ?? []) names.add(call.function.name);
  }
  return names;
}

/** Options of a {@linkcode ToolDisclosure}. */
export interface DisclosureOptions {
  /** Stubs first (`--lazy-tools`); otherwise every tool is sent in full from the start. */
  readonly lazy: boolean;
  /** Tools already disclosed (those a resumed conversation called). */
  readonly loaded?: Iterable<string>;
}

/**
 * Which of a manifest's tools the model has seen in full, and the tool definitions of each request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { validateManifest } from "../manifest/manifest.ts";
 * import { ToolDisclosure } from "./lazy_tools.ts";
 * const loaded = validateManifest({ tools: [{ name: "t", command: ["./tools/bin/t"] }] }, "/srv/tools.json");
 * if (loaded.ok) {
 *   const disclosure = new ToolDisclosure(loaded.manifest, { lazy: true });
 *   assert.ok(disclosure.isStub("t"));
 *   assert.equal(disclosure.disclose({ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }).kind, "invalid_args");
 *   assert.equal(disclosure.isStub("t"), false); // from now on its full definition is sent
 * }
 * ```
 */
export class ToolDisclosure {
  readonly #tools: readonly ToolSpec[];
  readonly #full = new Set<string>();

  constructor(manifest: Manifest, options: DisclosureOptions) {
    this.#tools = manifest.tools;
    for (const tool of manifest.tools) if (!options.lazy || tool.alwaysLoad) this.#full.add(tool.name);
    const known = new Set(manifest.tools.map((tool) => tool.name));
    for (const name of options.loaded ?? []) if (known.has(name)) this.#full.add(name);
  }

  /** The tools of the next request, in the manifest's order: in full, or as stubs. */
  definitions(): OpenAITool[] {
    return this.#tools.map((tool) => this.#full.has(tool.name) ? toOpenAI(tool) : toStub(tool));
  }

  /** How many tools are still stubs. */
  get stubs(): number {
    return this.#tools.length - this.#full.size;
  }

  /** Whether `name` is a tool of the manifest that the model has seen only as a stub. */
  isStub(name: string): boolean {
    return !this.#full.has(name) && this.#tools.some((tool) => tool.name === name);
  }

  /**
   * Answers the first call of a stub without running it: an `invalid_args` failure (retryable) that holds the
   * tool's full definition and asks for the call again; from now on the tool is sent in full.
   */
  disclose(call: ToolCall): FailureEnvelope {
    const tool = this.#tools.find((candidate) => candidate.name === call.function.name);
    if (tool === undefined) throw new Error(`disclose: ${JSON.stringify(call.function.name)} is no tool`);
    this.#full.add(tool.name);
    return failure(
      "invalid_args",
      `${tool.name} was not run: this was its first call, and its arguments were not checked. Its full ` +
        `definition is in \`definition\` and in the tools of the next request: call ${tool.name} again with ` +
        `arguments that match its parameters.`,
      { tool: tool.name, retryable: true, metadata: { not_run: true, definition: toOpenAI(tool).function } },
    );
  }
}
