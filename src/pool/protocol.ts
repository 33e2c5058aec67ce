/**
 * The wire format of toolgate's worker pool over NATS JetStream: the stream, the subjects, the timings both sides
 * keep, every message (checked on receipt: a message is `unknown` until it is one), and the manifest's hash.
 *
 * The flow of one call: the caller publishes a signed {@linkcode CallMessage} to the work-queue stream (its id is
 * the JetStream message id, so a repeated publish is dropped); a worker takes it, checks its signature, its age and
 * that it has not seen its id before (else it answers a {@linkcode RefusedMessage}, which says nothing of the
 * worker), checks the manifest's hash, and asks the caller for the go (a {@linkcode ClaimMessage}, a request on the
 * caller's reply subject): only the caller knows whether the call is still wanted and whether it already ran
 * somewhere. With the go (signed, bound to that one claim), the worker runs the call, beats every
 * {@linkcode POOL}.heartbeatMs, and hands the envelope back (a {@linkcode ResultMessage}). The caller stops a call on
 * the worker's control subject (a {@linkcode CancelMessage}). A `toolgate/1` tool's questions, log and progress
 * travel to the caller and its answers back (`relay_messages.ts`). Every message but a refusal is signed with the
 * pool's key (`signing.ts`), and one that does not verify is ignored: a go, a result, a cancel alike.
 *
 * One piece: each message's type sits beside its reader, so that what is sent and what is accepted cannot drift
 * apart; most of the length is their documentation.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { sha256Hex } from "../base/sha256_hex.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import type { CallDefaults } from "../run/tool_pool.ts";
import { canonical } from "../base/canonical_json.ts";
import { type AskMessage, type EventMessage, readRelayed } from "./relay_messages.ts";
import { MAX_OUTPUT_BYTES, outputCapProblem } from "../process/executor_defaults.ts";

/**
 * The names and timings of the pool: the same for every caller and worker (the stream and its consumer are made by
 * whichever starts first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { POOL } from "./protocol.ts";
 * assert.equal(POOL.subject, "toolgate.calls");
 * ```
 */
export const POOL = {
  /** The work-queue stream: a call is kept until a worker acknowledges it. */
  stream: "TOOLGATE_CALLS",
  /** The subject calls are published on. */
  subject: "toolgate.calls",
  /** The one durable consumer every worker pulls from. */
  consumer: "toolgate-workers",
  /** A call unacknowledged this long is delivered again (a worker that runs one says it works every beat). */
  ackWaitMs: 5_000,
  /** How often a worker running a call tells the caller (and the stream) that it still does. */
  heartbeatMs: 1_000,
  /** Beats a caller may miss before it takes the worker for dead. */
  missedBeats: 3,
  /** The stream drops a call published again with the same id within this window. */
  duplicateWindowMs: 120_000,
  /** A call nobody took this long is dropped by the stream (its caller gave up long before). */
  maxAgeMs: 3_600_000,
  /** How long a worker waits for a caller's answer (the go, a result's receipt) before it gives the call up. */
  answerMs: 2_000,
  /** How long a caller waits for a publish to be stored before it tries again (with the same id). */
  publishMs: 2_000,
  /**
   * How far a call's timestamp may be from a worker's clock (either way), besides the time its caller waits for a
   * worker: a call older than that is stale and refused, so a worker needs to remember the ids it took that long.
   */
  clockSkewMs: 60_000,
  /** The most call ids a worker remembers at once (against replays); past it, new calls wait (they are not run). */
  maxSeenIds: 100_000,
} as const;

/** The version of these messages: a worker refuses a call of another version, by name. */
export const PROTOCOL_VERSION = 2;

/**
 * A call, as the stream holds it. Nothing in it is secret beyond what the caller chose to send: the tool's name
 * and arguments, the manifest's hash, the caller's limits and where to answer, when it was made, and the
 * signature over all of it.
 *
 * @example
 * ```ts
 * import type { CallMessage } from "./protocol.ts";
 * const call: CallMessage = {
 *   v: 2, id: "0b7c...", tool: "get_time", args: '{"timezone":"UTC"}', manifest: "sha256:...",
 *   reply: "_INBOX.abc", defaults: { timeoutSec: 30, graceMs: 2000, maxOutputBytes: 4194304 },
 *   ts: 1767225600000, wait: 30000, sig: "3q2-7w...",
 * };
 * ```
 */
export interface CallMessage {
  readonly v: number;
  /** The call's id: the stream's de-duplication key, and the name it goes by in both audit logs. */
  readonly id: string;
  readonly tool: string;
  /** The arguments as the caller sent them (the worker checks them again). */
  readonly args: string;
  /** The hash of the caller's manifest ({@linkcode manifestHash}). */
  readonly manifest: string;
  /** The caller's subject for the claim, the beats and the result. */
  readonly reply: string;
  readonly defaults: CallDefaults;
  /** When the caller made the call (ms since the epoch, its clock). */
  readonly ts: number;
  /** How long the caller waits for a worker to take it (ms): a worker takes it until `ts + wait` (and the skew). */
  readonly wait: number;
  /** The caller's signature over every other field (`signing.ts`, purpose `call`). */
  readonly sig: string;
}

/**
 * A worker asks the caller for the go before it runs a call (a request on the call's reply subject).
 *
 * @example
 * ```ts
 * import type { ClaimMessage } from "./protocol.ts";
 * const claim: ClaimMessage = {
 *   t: "claim", id: "0b7c...", worker: "build-1:4242", control: "_INBOX.w1", nonce: "5f1e...", sig: "Xk9...",
 * };
 * ```
 */
export interface ClaimMessage {
  readonly t: "claim";
  readonly id: string;
  /** The worker's name, for messages and the audit log. */
  readonly worker: string;
  /** Where the caller sends a {@linkcode CancelMessage} while the worker runs the call. */
  readonly control: string;
  /** New for each claim: the caller's go names it, so a go answers this one claim and no other. */
  readonly nonce: string;
  /** The worker's signature (purpose `reply`). */
  readonly sig: string;
}

/**
 * The caller's answer to a claim: run it (`go`), not now (`later`: the stream delivers it again), or never (`no`);
 * signed (purpose `go`) over the claim's id, worker and nonce, so that nobody but a caller can say yes.
 *
 * @example
 * ```ts
 * import type { ClaimAnswer } from "./protocol.ts";
 * const answer: ClaimAnswer = { go: "later", id: "0b7c...", worker: "build-1:4242", nonce: "5f1e...", sig: "Qe2..." };
 * ```
 */
export interface ClaimAnswer {
  readonly go: "yes" | "later" | "no";
  readonly id: string;
  readonly worker: string;
  readonly nonce: string;
  readonly sig: string;
}

/**
 * A worker that runs another manifest tells the caller so (a request; no answer: the caller is gone). It names
 * no hash: the caller's message says which manifest the caller has, and the worker's log which one it serves.
 *
 * @example
 * ```ts
 * import type { MismatchMessage } from "./protocol.ts";
 * const mismatch: MismatchMessage = { t: "mismatch", id: "0b7c...", worker: "build-1:4242", sig: "Ab3..." };
 * ```
 */
export interface MismatchMessage {
  readonly t: "mismatch";
  readonly id: string;
  readonly worker: string;
  readonly sig: string;
}

/**
 * Why a worker refused a call before anything else: it carries no signature (`unsigned`), its signature does not
 * verify with the worker's key (`signature`), it is too old or too new (`stale`), the worker took a call of that
 * id already (`replayed`).
 */
export type RefusedReason = "unsigned" | "signature" | "stale" | "replayed";

/**
 * A worker refused a call (published once, unsigned: it tells a misconfigured caller why nothing runs, and says
 * nothing of the worker's manifest). A caller only ever shows it in its own `unavailable` message.
 *
 * @example
 * ```ts
 * import type { RefusedMessage } from "./protocol.ts";
 * const refused: RefusedMessage = { t: "refused", id: "0b7c...", worker: "build-1:4242", reason: "signature" };
 * ```
 */
export interface RefusedMessage {
  readonly t: "refused";
  readonly id: string;
  readonly worker: string;
  readonly reason: RefusedReason;
}

/**
 * A worker's beat while it runs a call.
 *
 * @example
 * ```ts
 * import type { BeatMessage } from "./protocol.ts";
 * const beat: BeatMessage = { t: "beat", id: "0b7c...", worker: "build-1:4242", n: 3, sig: "Zr8..." };
 * ```
 */
export interface BeatMessage {
  readonly t: "beat";
  readonly id: string;
  readonly worker: string;
  /** The beat's number (1, 2, ...): the caller heeds only a beat newer than the last. */
  readonly n: number;
  readonly sig: string;
}

/**
 * A call's envelope, from the worker that ran it (a request: the caller's answer is its receipt).
 *
 * @example
 * ```ts
 * import type { ResultMessage } from "./protocol.ts";
 * const result: ResultMessage = {
 *   t: "result", id: "0b7c...", worker: "build-1:4242", envelope: { ok: true, result: {} }, sig: "Pq4...",
 * };
 * ```
 */
export interface ResultMessage {
  readonly t: "result";
  readonly id: string;
  readonly worker: string;
  /** The envelope, as the worker's executor made it (checked by the caller with `asEnvelope`). */
  readonly envelope: unknown;
  readonly sig: string;
}

/**
 * Stops a call on the worker that runs it: its tree ends there, as a local call's would. Signed by the caller
 * (purpose `cancel`): nobody else stops a call.
 *
 * @example
 * ```ts
 * import type { CancelMessage } from "./protocol.ts";
 * const cancel: CancelMessage = { t: "cancel", id: "0b7c...", byUser: true, sig: "Lm5..." };
 * ```
 */
export interface CancelMessage {
  readonly t: "cancel";
  readonly id: string;
  /** A person stopped it (the envelope then says `killed_by: "user"`). */
  readonly byUser: boolean;
  readonly sig: string;
}

/**
 * Any message on a call's reply subject.
 *
 * @example
 * ```ts
 * import type { ReplyMessage } from "./protocol.ts";
 * const reply: ReplyMessage = { t: "refused", id: "0b7c...", worker: "w", reason: "stale" };
 * ```
 */
export type ReplyMessage =
  | ClaimMessage
  | MismatchMessage
  | RefusedMessage
  | BeatMessage
  | ResultMessage
  | AskMessage
  | EventMessage;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A message as bytes on the wire.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encode } from "./protocol.ts";
 * assert.equal(new TextDecoder().decode(encode({ go: "yes" })), '{"go":"yes"}');
 * ```
 */
export function encode(message: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(message));
}

function decode(data: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(data));
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

const isText = (value: unknown): value is string => typeof value === "string" && value !== "";
/**
 * A reply or control subject as the NATS client makes one (`createInbox()`): a message can name no other subject,
 * so a crafted call cannot make a worker (or a crafted claim make a caller) publish on a JetStream API subject
 * or any other with the sender's rights.
 */
const INBOX = /^_INBOX\.[A-Za-z0-9]+$/;
const isInbox = (value: unknown): value is string => typeof value === "string" && INBOX.test(value);
const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && value > 0;
/** A kill grace: `--kill-grace 0` (SIGKILL at once) is a caller's right. */
const isGrace = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0;

/**
 * A call as read from the stream, before its signature is checked: one without a signature is still a call (the
 * worker refuses it as `unsigned`, and says so to its reply subject).
 */
export type UncheckedCall = Omit<CallMessage, "sig"> & { readonly sig?: string };

/** Whole milliseconds of 0 or more. */
const isMs = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/**
 * A call from the stream, or why it is not one (said in the worker's log; the call is then dropped). The call
 * holds only the known fields: they are what its signature covers, and nothing else a sender adds travels on.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encode, readCall } from "./protocol.ts";
 * assert.deepEqual(readCall(encode({ v: 2 })), { ok: false, reason: "id, tool, args and manifest must be strings" });
 * ```
 */
export function readCall(
  data: Uint8Array,
): { ok: true; call: UncheckedCall } | { ok: false; reason: string } {
  const value = decode(data);
  if (value === undefined) return { ok: false, reason: "not a JSON object" };
  if (value.v !== PROTOCOL_VERSION) {
    return {
      ok: false,
      reason: `protocol version ${JSON.stringify(value.v)}, this worker speaks ${PROTOCOL_VERSION}`,
    };
  }
  const { id, tool, args, manifest, reply, defaults, ts, wait, sig } = value;
  if (!isText(id) || !isText(tool) || typeof args !== "string" || !isText(manifest)) {
    return { ok: false, reason: "id, tool, args and manifest must be strings" };
  }
  if (!isInbox(reply)) return { ok: false, reason: "reply must be an inbox subject (_INBOX.…)" };
  if (
    !isRecord(defaults) || !isCount(defaults.timeoutSec) || !isGrace(defaults.graceMs) ||
    !isCount(defaults.maxOutputBytes) || outputCapProblem(defaults.maxOutputBytes) !== undefined
  ) {
    return {
      ok: false,
      reason:
        `defaults must hold positive timeoutSec and maxOutputBytes (at most ${MAX_OUTPUT_BYTES}), and a graceMs of 0 or more`,
    };
  }
  if (!isMs(ts) || !isMs(wait) || wait > POOL.maxAgeMs) {
    return { ok: false, reason: `ts and wait must be whole milliseconds (wait at most ${POOL.maxAgeMs})` };
  }
  if (sig !== undefined && typeof sig !== "string") return { ok: false, reason: "sig must be a string" };
  const { timeoutSec, graceMs, maxOutputBytes } = defaults;
  return {
    ok: true,
    call: {
      v: PROTOCOL_VERSION,
      id,
      tool,
      args,
      manifest,
      reply,
      defaults: { timeoutSec, graceMs, maxOutputBytes },
      ts,
      wait,
      ...(sig === undefined ? {} : { sig }),
    },
  };
}

const REFUSED_REASONS: readonly string[] = ["unsigned", "signature", "stale", "replayed"];
const hasSig = (value: Record<string, unknown>): value is Record<string, unknown> & { sig: string } =>
  typeof value.sig === "string";

/**
 * A message on a call's reply subject, or `undefined` for anything else (ignored). Its signature is checked by
 * the caller (every kind but a refusal carries one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encode, readReply } from "./protocol.ts";
 * assert.equal(readReply(encode({ t: "beat", id: "a", worker: "w", n: 1, sig: "x" }))?.t, "beat");
 * ```
 */
export function readReply(data: Uint8Array): ReplyMessage | undefined {
  const value = decode(data);
  if (value === undefined || !isText(value.id) || !isText(value.worker)) return undefined;
  const { id, worker } = value;
  if (value.t === "refused") {
    return REFUSED_REASONS.includes(value.reason as string)
      ? { t: "refused", id, worker, reason: value.reason as RefusedReason }
      : undefined;
  }
  if (!hasSig(value)) return undefined;
  const { sig } = value;
  switch (value.t) {
    case "claim":
      return isInbox(value.control) && isText(value.nonce)
        ? { t: "claim", id, worker, control: value.control, nonce: value.nonce, sig }
        : undefined;
    case "mismatch":
      return { t: "mismatch", id, worker, sig };
    case "beat":
      return isCount(value.n) && Number.isSafeInteger(value.n)
        ? { t: "beat", id, worker, n: value.n, sig }
        : undefined;
    case "result":
      return { t: "result", id, worker, envelope: value.envelope, sig };
    case "ask":
    case "event":
      return readRelayed(value);
  }
  return undefined;
}

/**
 * The caller's answer to a claim, or `undefined` when it is not one (a worker then takes it as `no`: it never
 * runs on a doubt). Its signature is checked by the worker.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encode, readClaimAnswer } from "./protocol.ts";
 * assert.equal(readClaimAnswer(encode({ go: "yes", id: "a", worker: "w", nonce: "n", sig: "s" }))?.go, "yes");
 * assert.equal(readClaimAnswer(encode({ go: "yes" })), undefined); // unsigned
 * ```
 */
export function readClaimAnswer(data: Uint8Array): ClaimAnswer | undefined {
  const value = decode(data);
  if (value === undefined || !hasSig(value)) return undefined;
  const { go, id, worker, nonce, sig } = value;
  if ((go !== "yes" && go !== "later" && go !== "no") || !isText(id) || !isText(worker) || !isText(nonce)) {
    return undefined;
  }
  return { go, id, worker, nonce, sig };
}

/**
 * A cancellation on a worker's control subject, or `undefined`. Its signature is checked by the worker.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encode, readCancel } from "./protocol.ts";
 * assert.ok(readCancel(encode({ t: "cancel", id: "a", byUser: true, sig: "s" }))?.byUser);
 * ```
 */
export function readCancel(data: Uint8Array): CancelMessage | undefined {
  const value = decode(data);
  if (value === undefined || value.t !== "cancel" || !isText(value.id) || !hasSig(value)) return undefined;
  return { t: "cancel", id: value.id, byUser: value.byUser === true, sig: value.sig };
}

/**
 * The hash of what a manifest's tools are, as both sides of the pool must agree on it: each tool's name,
 * description, schemas, command as written, limits, environment names, flags and resolved sandbox profile. Where
 * the manifest lies (its absolute paths) is left out: the same `tools.json` on two machines has one hash.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { manifestHash } from "./protocol.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * assert.ok(loaded.ok);
 * assert.match(await manifestHash(loaded.manifest), /^sha256:[0-9a-f]{64}$/);
 * ```
 */
export async function manifestHash(manifest: Manifest): Promise<string> {
  const tools = manifest.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    schema: tool.schema,
    outputSchema: tool.outputSchema,
    command: tool.command,
    timeoutSec: tool.timeoutSec,
    idleTimeoutSec: tool.idleTimeoutSec,
    envPassthrough: tool.envPassthrough,
    secrets: tool.secrets,
    readOnly: tool.readOnly,
    concurrent: tool.concurrent,
    alwaysLoad: tool.alwaysLoad,
    profile: tool.profile,
    builtin: tool.builtin,
    // Where a bound secret may go is part of what the tool is (only when it has one: older hashes stay).
    ...(tool.credentials.length > 0 ? { credentials: tool.credentials } : {}),
  }));
  return `sha256:${await sha256Hex(canonical(tools))}`;
}

/**
 * A hash short enough for a message (`sha256:` and 12 hex digits).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shortHash } from "./protocol.ts";
 * assert.equal(shortHash("sha256:9f86d081884c7d659a2feaa0c55ad015"), "sha256:9f86d081884c");
 * ```
 */
export function shortHash(hash: string): string {
  return hash.slice(0, "sha256:".length + 12);
}
