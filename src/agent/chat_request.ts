/**
 * The body of one chat-completions request: the conversation, the tools in OpenAI's shape, and what a streamed
 * request asks for.
 *
 * @module
 */
import { type LoopResources, readResourceOpenAI } from "./resource_tools.ts";
import type { Executor } from "../run/executor.ts";
import type { ChatMessage } from "./messages.ts";
import type { ChatRequest } from "./chat_client.ts";
import { type OpenAITool, toOpenAI } from "../manifest/tool_definitions.ts";
import { storeSecretOpenAI } from "../run/store_secret.ts";
import type { LoopSecrets } from "./credential_heal.ts";

/**
 * The chat-completions request for a conversation: the manifest's tools in OpenAI's shape (or the `tools` given,
 * such as stubs) with `tool_choice: "auto"`, or no tools key at all when there are none. A streamed request asks
 * for the token usage in the stream's last chunk (`stream_options.include_usage`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chatRequest } from "./chat_request.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const request = chatRequest(executor, [{ role: "user", content: "What time is it?" }], { model: "gpt-4o-mini" });
 * assert.equal(request.model, "gpt-4o-mini");
 * assert.equal(request.tool_choice, "auto");
 * assert.equal((request.tools as unknown[]).length, executor.manifest.tools.length); // one definition a tool
 * ```
 */
export function chatRequest(
  executor: Executor,
  messages: readonly ChatMessage[],
  options: {
    model: string;
    temperature?: number;
    stream?: boolean;
    tools?: readonly OpenAITool[];
    /** Leave out `stream_options` (for an endpoint that refuses it). */
    streamWithoutUsage?: boolean;
    /** The loop's \`store_secret\`: offered beside the tools when one declares a secret. */
    secrets?: LoopSecrets;
    /** The loop's `read_resource`: offered when an MCP server offers resources (resource_tools.ts). */
    resources?: LoopResources;
  },
): ChatRequest {
  const body: Record<string, unknown> = { model: options.model, messages };
  const tools: unknown[] = [...(options.tools ?? executor.manifest.tools.map(toOpenAI))];
  // store_secret on every request from the first, whole (never a stub): a credential failure heals at once.
  if (options.secrets && executor.declaredSecrets.length > 0) tools.push(storeSecretOpenAI());
  if (options.resources !== undefined) tools.push(readResourceOpenAI(options.resources));
  if (tools.length > 0) {
    body.tools = tools;
    body.tool_choice = "auto";
  }
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.stream) {
    body.stream = true;
    if (!options.streamWithoutUsage) body.stream_options = { include_usage: true };
  }
  return body;
}
