/**
 * What a worker says to a call's caller, on the call's reply subject: why it is refused (unsigned, the reason
 * only), that another manifest runs here (never which), the claim and the caller's go, and the call's answer.
 * Everything but a refusal is signed with the pool's key; a go is heeded only when signed for this call, this
 * worker and this claim's nonce.
 *
 * @module
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { Envelope } from "../contract.ts";
import {
  type ClaimMessage,
  encode,
  type MismatchMessage,
  POOL,
  readClaimAnswer,
  type RefusedMessage,
  type RefusedReason,
  type ResultMessage,
  type UncheckedCall,
} from "./protocol.ts";
import { type PoolSigningKey, signed, verified } from "./signing.ts";

/** What each refusal means, for the worker's log. */
const REFUSALS: Record<RefusedReason, string> = {
  unsigned: "it is not signed",
  signature:
    "its signature does not verify with this worker's pool key (forged, or a caller with another key)",
  stale: `its timestamp is outside the freshness window (${POOL.clockSkewMs / 1000} s, and its wait)`,
  replayed: "a call with its id was taken here before (a replay)",
};

/** A caller's go: run the call, ask again later (it is not ready), or never. */
export type Go = "yes" | "later" | "no";

/**
 * One worker's replies to its calls' callers.
 *
 * @example
 * ```ts ignore
 * import { CallerReplies } from "./caller_replies.ts";
 * // const replies = new CallerReplies({ nc, key, name: "build-1", log: console.error });
 * // if (await replies.claim(call, controlSubject) === "yes") await replies.deliver(call, envelope);
 * ```
 */
export class CallerReplies {
  readonly #nc: NatsConnection;
  readonly #key: PoolSigningKey;
  readonly #name: string;
  readonly #log: (line: string) => void;

  constructor(options: {
    nc: NatsConnection;
    key: PoolSigningKey;
    /** The worker's name in its replies. */
    name: string;
    /** Where the worker says what it did not run, and why. */
    log: (line: string) => void;
  }) {
    this.#nc = options.nc;
    this.#key = options.key;
    this.#name = options.name;
    this.#log = options.log;
  }

  /**
   * Says why a call is not run, in the log and (once, unsigned) to its reply subject: the reason only, nothing of
   * this worker's manifest.
   */
  async refuse(call: UncheckedCall, reason: RefusedReason): Promise<void> {
    this.#log(`refused call ${call.id} (${call.tool}): ${REFUSALS[reason]}`);
    const refused: RefusedMessage = { t: "refused", id: call.id, worker: this.#name, reason };
    this.#nc.publish(call.reply, encode(refused));
    await this.#nc.flush().catch(() => {});
  }

  /** Tells the caller that another manifest runs here (not which); whether it heard. */
  async mismatch(call: UncheckedCall): Promise<boolean> {
    const mismatch: MismatchMessage = await signed(this.#key, "reply", {
      t: "mismatch",
      id: call.id,
      worker: this.#name,
    });
    return await this.#ask(call.reply, mismatch) !== undefined;
  }

  /**
   * Claims a call and waits for its caller's go (cancels and questions come to `control`): `no` unless the answer
   * is signed for this call, this worker and this claim. Never rejects: a go that cannot be had is no.
   */
  async claim(call: UncheckedCall, control: string): Promise<Go> {
    try {
      const nonce = crypto.randomUUID();
      const claim: ClaimMessage = await signed(this.#key, "reply", {
        t: "claim",
        id: call.id,
        worker: this.#name,
        control,
        nonce,
      });
      const data = await this.#ask(call.reply, claim);
      const answer = data === undefined ? undefined : readClaimAnswer(data);
      if (answer === undefined || answer.id !== call.id || answer.nonce !== nonce) return "no";
      if (answer.worker !== this.#name) return "no";
      return await verified(this.#key, "go", { ...answer }) ? answer.go : "no";
    } catch {
      return "no";
    }
  }

  /** Hands the envelope to the caller, trying again while it does not confirm (and giving up once it is gone). */
  async deliver(call: UncheckedCall, envelope: Envelope): Promise<void> {
    const result: ResultMessage = await signed(this.#key, "reply", {
      t: "result",
      id: call.id,
      worker: this.#name,
      envelope,
    });
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = await this.#request(call.reply, result);
      if (outcome !== "timeout") return;
    }
    this.#log(`the caller of ${call.id} (${call.tool}) did not confirm its answer`);
  }

  /** A request to a caller: its answer, or `undefined` when it is gone or silent. */
  async #ask(subject: string, message: unknown): Promise<Uint8Array | undefined> {
    const outcome = await this.#request(subject, message);
    return outcome instanceof Uint8Array ? outcome : undefined;
  }

  async #request(subject: string, message: unknown): Promise<Uint8Array | "gone" | "timeout"> {
    try {
      return (await this.#nc.request(subject, encode(message), { timeout: POOL.answerMs })).data;
    } catch (error) {
      const noResponders = (error as { isNoResponders?: () => boolean }).isNoResponders?.() === true;
      return noResponders ? "gone" : "timeout";
    }
  }
}
