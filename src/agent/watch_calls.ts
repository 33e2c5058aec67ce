/** The agent loop's calls as a watcher (`--console`) sees them: each one's start, messages, stderr and end. @module */
import type { Envelope } from "../contract.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import type { CallSeen, CallWatch } from "../run/call_watch.ts";
import type { ToolCall } from "./messages.ts";

/**
 * Tells `watch` (when there is one) that the model's call started: its arguments are the JSON the model sent, or
 * its text when it is not JSON; `stop` stops it as its user (the console's Stop).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { watchCall } from "./watch_calls.ts";
 * assert.equal(watchCall(undefined, { id: "1", type: "function", function: { name: "echo", arguments: "{}" } }), undefined);
 * ```
 */
export function watchCall(
  watch: CallWatch | undefined,
  toolCall: ToolCall,
  stop?: () => void,
): CallSeen | undefined {
  if (watch === undefined) return undefined;
  let args: unknown;
  try {
    args = JSON.parse(toolCall.function.arguments);
  } catch {
    args = toolCall.function.arguments;
  }
  return watch.started({ tool: toolCall.function.name, caller: "model", args, stop });
}

/** What a run hands the executor so that the terminal's progress line and the watcher hear of the call. */
export interface Watched {
  readonly onToolEvent?: (event: ToolEvent) => void;
  readonly onStderrLine?: (line: string) => void;
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/**
 * Runs a call with its messages going to `shown` (the terminal's progress line) and the watcher, and tells the
 * watcher how it ended.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runWatched } from "./watch_calls.ts";
 * assert.deepEqual(await runWatched(undefined, undefined, () => Promise.resolve({ ok: true, result: null })), { ok: true, result: null });
 * ```
 */
export async function runWatched(
  seen: CallSeen | undefined,
  shown: Watched | undefined,
  run: (watched: Watched) => Promise<Envelope>,
): Promise<Envelope> {
  if (seen === undefined) return await run(shown ?? {});
  let envelope: Envelope;
  try {
    envelope = await run({
      ...shown,
      onToolEvent: (event) => {
        shown?.onToolEvent?.(event);
        seen.toolEvent(event);
      },
      onStderr: (chunk) => seen.stderr(chunk),
    });
  } catch (error) {
    seen.ended(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
  seen.ended(envelope);
  return envelope;
}
