/**
 * Input-required rounds of the 2026-07-28 revision, for a call that needs a person's approval: the server cannot
 * send its client a request (there is no session to send it on), so the call is answered with an
 * `InputRequiredResult` (an elicitation form in `inputRequests`, and a `requestState`) and nothing runs; the client
 * asks its user and calls again with the answer in `inputResponses` and the same `requestState`. This module owns
 * that state and the approval question of a round:
 *
 * - the state is signed (HMAC-SHA256 under a key made at start and never shown), bound to the caller, the tool
 *   and a digest of its arguments, expires after {@linkcode ROUND_LIMITS}'s `ttlMs`, and is good once: a tampered,
 *   expired, replayed or rebound state (other arguments, another tool, another caller) is refused;
 * - an answer is taken only with a valid state: `inputResponses` sent without one are ignored, so that no client
 *   can approve a question it was never asked.
 *
 * Not here: the requests of the revision (`stateless.ts`); the approval policy (`policy/policy.ts`).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { isRecord } from "../contract.ts";
import type { Answer, Ask } from "../policy/policy.ts";
import { approvalForm } from "./approval_form.ts";

/** How long a round's state is good for, and the most rounds awaiting an answer at once (the oldest go first). */
export const ROUND_LIMITS = { ttlMs: 10 * 60 * 1000, maxOpen: 1024 } as const;

/** The key of the approval question in `inputRequests` and `inputResponses`. */
export const APPROVAL_KEY = "toolgate_approval";

/** What a round's state is bound to: who called which tool with which arguments. */
export interface RoundBinding {
  readonly caller: string;
  readonly tool: string;
  readonly args: unknown;
}

/** The answer to a call that needs input: what to ask, and the state to send back with the answer. */
export class InputRequired extends Error {
  /** The `inputRequests` map of the `InputRequiredResult`. */
  readonly inputRequests: Record<string, { method: string; params: Record<string, unknown> }>;
  /** The signed state the client sends back with its answers. */
  readonly requestState: string;

  constructor(
    inputRequests: Record<string, { method: string; params: Record<string, unknown> }>,
    requestState: string,
  ) {
    super("the call needs input from the client's user");
    this.inputRequests = inputRequests;
    this.requestState = requestState;
  }
}

const base64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64url");

/** JSON with object keys sorted, so that the same arguments give the same digest. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isRecord(value)) {
    return `{${
      Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")
    }}`;
  }
  return JSON.stringify(value ?? null);
}

function digest(binding: RoundBinding): string {
  return createHash("sha256").update(canonical([binding.caller, binding.tool, binding.args ?? {}])).digest(
    "base64url",
  );
}

/**
 * The signed, single-use states of the rounds awaiting an answer, for one server.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RoundStates } from "./input_rounds.ts";
 * const states = new RoundStates();
 * const binding = { caller: "http|a", tool: "note", args: { text: "x" } };
 * const state = states.issue(binding, "page-1");
 * assert.deepEqual(states.redeem(state + "x", binding), { refused: "the requestState failed its integrity check" });
 * assert.deepEqual(states.redeem(state, { ...binding, args: { text: "y" } }), {
 *   refused: "the requestState is for another call",
 * });
 * assert.deepEqual(states.redeem(state, binding), { data: "page-1" }); // good once
 * assert.deepEqual(states.redeem(state, binding), { refused: "the requestState was used already, or has expired" });
 * ```
 */
export class RoundStates {
  readonly #key = crypto.getRandomValues(new Uint8Array(32));
  /** Open rounds: nonce -> when its state expires (`Date.now()` ms), oldest first. */
  readonly #open = new Map<string, number>();
  readonly #ttlMs: number;
  readonly #maxOpen: number;
  readonly #now: () => number;

  constructor(options: { ttlMs?: number; maxOpen?: number; now?: () => number } = {}) {
    this.#ttlMs = options.ttlMs ?? ROUND_LIMITS.ttlMs;
    this.#maxOpen = options.maxOpen ?? ROUND_LIMITS.maxOpen;
    this.#now = options.now ?? Date.now;
  }

  #mac(payload: string): Uint8Array {
    return createHmac("sha256", this.#key).update(payload).digest();
  }

  /** A new state for a round of `binding`, carrying `data` (signed, not secret: the client can read it). */
  issue(binding: RoundBinding, data?: string): string {
    const now = this.#now();
    for (const [nonce, expires] of this.#open) if (expires <= now) this.#open.delete(nonce);
    while (this.#open.size >= this.#maxOpen) this.#open.delete(this.#open.keys().next().value!);
    const nonce = base64url(crypto.getRandomValues(new Uint8Array(16)));
    const expires = now + this.#ttlMs;
    this.#open.set(nonce, expires);
    const payload = base64url(
      new TextEncoder().encode(JSON.stringify({ n: nonce, b: digest(binding), e: expires, d: data })),
    );
    return `${payload}.${base64url(this.#mac(payload))}`;
  }

  /** Takes a state back for `binding`: its data when it is good (it is spent now), or why it is refused. */
  redeem(state: unknown, binding: RoundBinding): { readonly refused: string } | { readonly data?: string } {
    const broken = { refused: "the requestState failed its integrity check" };
    const [payload, mac, ...rest] = typeof state === "string" ? state.split(".") : [];
    const given = mac === undefined ? new Uint8Array() : Buffer.from(mac, "base64url");
    const expected = payload === undefined ? new Uint8Array(32) : this.#mac(payload);
    if (
      rest.length > 0 || mac === undefined || given.length !== expected.length ||
      !timingSafeEqual(given, expected) || base64url(given) !== mac
    ) {
      return broken;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      return broken;
    }
    if (!isRecord(parsed) || typeof parsed.n !== "string") return broken;
    if (parsed.b !== digest(binding)) return { refused: "the requestState is for another call" };
    const expires = this.#open.get(parsed.n);
    this.#open.delete(parsed.n);
    if (expires === undefined || expires <= this.#now()) {
      return { refused: "the requestState was used already, or has expired" };
    }
    return typeof parsed.d === "string" ? { data: parsed.d } : {};
  }
}

/** The approval question as an `elicitation/create` form: approve, with "always" for the caller's later calls. */
export function approvalRequest(question: { tool: string; lines: readonly string[] }): {
  method: string;
  params: Record<string, unknown>;
} {
  return {
    method: "elicitation/create",
    params: { mode: "form", ...approvalForm(question, "from this client") },
  };
}

/** A person's answer from an `ElicitResult` in `inputResponses`: accept is yes (or always), anything else no. */
export function approvalAnswer(response: unknown): Answer {
  if (!isRecord(response) || response.action !== "accept") return "no";
  return isRecord(response.content) && response.content.always === true ? "always" : "yes";
}

/**
 * The asker of one stateless call's approval. With an answer from a redeemed round it answers at once; without,
 * it records the question and fails, and `pending()` then gives the {@linkcode InputRequired} to answer the call
 * with (a new round, its state issued for `binding`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { approvalRound, InputRequired, RoundStates } from "./input_rounds.ts";
 * const states = new RoundStates();
 * const round = approvalRound(states, { caller: "c", tool: "note", args: {} }, undefined);
 * await assert.rejects(round.ask({ tool: "note", reason: "it writes", lines: ["note writes"] }));
 * assert.ok(round.pending() instanceof InputRequired);
 * const answered = approvalRound(states, { caller: "c", tool: "note", args: {} }, "yes");
 * assert.equal(await answered.ask({ tool: "note", reason: "it writes", lines: [] }), "yes");
 * assert.equal(answered.pending(), undefined);
 * ```
 */
export function approvalRound(
  states: RoundStates,
  binding: RoundBinding,
  answer: Answer | undefined,
): { ask: Ask; pending: () => InputRequired | undefined } {
  let pending: InputRequired | undefined;
  const ask: Ask = (question) => {
    if (answer !== undefined) return Promise.resolve(answer);
    pending ??= new InputRequired({ [APPROVAL_KEY]: approvalRequest(question) }, states.issue(binding));
    return Promise.reject(pending);
  };
  return { ask, pending: () => pending };
}
