/** The envelope of a `toolgate/1` tool's run: its answer from the channel, its failure from the run. @module */
import { type Envelope, withContent } from "../contract.ts";
import { envelopeFromRun, type OutcomeContext } from "./run_envelope.ts";
import type { RunResult } from "./run_terms.ts";
import type { ToolChannel } from "../manifest/tool_protocol.ts";

const encoder = new TextEncoder();

/**
 * The envelope of a run: as always for a tool without a channel; for a `toolgate/1` tool, the run's outcome read
 * as if its stdout had been the `result` message's value (`null` without one) and its stderr what the channel
 * kept, with the content blocks it sent added to a success.
 *
 * @example Not run as a doc test: a fragment of the executor, with a channel, a request and its context in scope.
 * ```ts ignore
 * import { protocolEnvelope } from "./protocol_envelope.ts";
 * const envelope = protocolEnvelope(channel, await runProcess({ ...request, sink: channel.sink }), context);
 * ```
 */
export function protocolEnvelope(
  channel: ToolChannel | undefined,
  run: RunResult,
  context: OutcomeContext,
): Envelope {
  if (channel === undefined) return envelopeFromRun(run, context);
  const stdout = encoder.encode(JSON.stringify(channel.result === undefined ? null : channel.result));
  const stderr = channel.stderr();
  const replay = { ...run, stdout, stdoutBytes: stdout.length, stderr, stderrBytes: stderr.length };
  const envelope = envelopeFromRun(replay, context);
  return envelope.ok ? withContent(envelope, channel.content) : envelope;
}
