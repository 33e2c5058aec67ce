/**
 * The caller's side of the worker pool: hands a call to the stream and waits for its envelope. Only the caller
 * knows whether a call is still wanted and whether it already ran somewhere, so every worker asks it for the go;
 * that one rule gives the pool its guarantees: a call nobody took in time never runs later, a read-only call whose
 * worker died runs again on another, and any other call runs at most once. The caller signs what it sends (the
 * call, each go, a cancel) with the pool's key, and heeds only what workers signed with it.
 *
 * One piece: a call's stages (queued, running, lost, stopping, done) are one state machine, read by
 * the claim rule, the clock and the stop alike; split, each would see half of it.
 *
 * @module
 */
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient, type JetStreamPublishOptions as Publish } from "@nats-io/jetstream";
import { type Envelope, failure, type FailureEnvelope } from "../contract.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { stoppedByUser, userStopped } from "../process/stop.ts";
import type { PoolAddress } from "./address.ts";
import { connectPool } from "./connect.ts";
import type { PoolAnswer, PoolRequest, ToolPool } from "../run/tool_pool.ts";
import {
  type CallMessage,
  type ClaimAnswer,
  type ClaimMessage,
  encode,
  manifestHash,
  POOL,
  PROTOCOL_VERSION,
  readReply,
  type RefusedReason,
  shortHash,
} from "./protocol.ts";
import { type PoolSigningKey, signed, verified } from "./signing.ts";
import { CallerRelay } from "./question_relay.ts";
import { receivedEnvelope } from "./relay_messages.ts";
import { traceHeaders } from "./trace_headers.ts";

/**
 * The pool behind a NATS server with JetStream.
 *
 * @example
 * ```ts ignore
 * import { PoolClient } from "./client.ts";
 * import { parsePoolUrl } from "./address.ts";
 * const address = parsePoolUrl("nats://127.0.0.1:4222");
 * // const pool = await PoolClient.open(address, Deno.env.toObject(), manifest, key); // key: loadPoolKey
 * // const answer = await pool.run({ tool: "get_time", readOnly: true, argsText: "{}", startWithinMs: 5000, defaults });
 * ```
 */
export class PoolClient implements ToolPool {
  readonly shown: string;
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #manifest: string;
  readonly #key: PoolSigningKey;

  private constructor(nc: NatsConnection, shown: string, manifest: string, key: PoolSigningKey) {
    this.#nc = nc;
    this.#js = jetstream(nc, { timeout: POOL.publishMs });
    this.shown = shown;
    this.#manifest = manifest;
    this.#key = key;
  }

  /** Connects to the pool for the calls of `manifest`, signed with `key` (the pool's); throws {@linkcode PoolError}. */
  static async open(
    address: PoolAddress,
    env: Readonly<Record<string, string>>,
    manifest: Manifest,
    key: PoolSigningKey,
  ): Promise<PoolClient> {
    const hash = await manifestHash(manifest);
    const nc = await connectPool(address, env, "toolgate caller");
    return new PoolClient(nc, address.shown, hash, key);
  }

  /** Runs one call on a worker and returns its envelope (or the pool's own `unavailable`, saying why). */
  async run(request: PoolRequest): Promise<PoolAnswer> {
    const id = crypto.randomUUID();
    const reply = createInbox();
    const pending = new PendingCall(id, request, this.shown, this.#nc, this.#key, this.#manifest);
    if (request.signal?.aborted) {
      // Stopped before it left: nothing is published for a worker to take and be told no.
      pending.dispose();
      return await pending.answer;
    }
    // Subscribed before the call is published: a worker's claim cannot come first.
    const subscription = this.#nc.subscribe(reply, { callback: (_error, msg) => void pending.receive(msg) });
    try {
      const message: CallMessage = await signed(this.#key, "call", {
        v: PROTOCOL_VERSION,
        id,
        tool: request.tool,
        args: request.argsText,
        manifest: this.#manifest,
        reply,
        defaults: {
          timeoutSec: request.defaults.timeoutSec,
          graceMs: request.defaults.graceMs,
          maxOutputBytes: request.defaults.maxOutputBytes,
        },
        ts: Date.now(),
        // The time it may wait for a worker: a worker takes it no later (and it is no use to anyone after).
        wait: Math.min(Math.ceil(request.startWithinMs), POOL.maxAgeMs),
      });
      const problem = await this.#publish(message, { msgID: id, headers: traceHeaders(request.trace) });
      if (problem !== undefined) {
        // Even if the stream kept it, no worker can run it: its claim finds nobody to answer.
        pending.finish(
          failure(
            "unavailable",
            `The worker pool at ${this.shown} cannot take the call (${problem}); it did not run.`,
            { tool: request.tool },
          ),
        );
      }
      return await pending.answer;
    } finally {
      pending.dispose();
      subscription.unsubscribe();
    }
  }

  /** Publishes a call, once more on a lost acknowledgement (the stream keeps one copy of an id); a problem, or none. */
  async #publish(message: CallMessage, options: Partial<Publish>): Promise<string | undefined> {
    let problem = "";
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.#js.publish(POOL.subject, encode(message), { ...options, timeout: POOL.publishMs });
        return undefined;
      } catch (error) {
        problem = (error as Error).message;
      }
    }
    return problem;
  }

  async close(): Promise<void> {
    await this.#nc.drain().catch(() => this.#nc.close());
  }
}

/** Where one call stands, seen from its caller. */
type Stage =
  | { readonly name: "queued"; readonly until: number }
  | {
    readonly name: "running";
    readonly worker: string;
    readonly control: string;
    lastBeat: number;
    beats: number;
  }
  | { readonly name: "lost"; readonly worker: string; readonly until: number }
  | { readonly name: "stopping"; readonly worker: string; readonly until: number }
  | { readonly name: "done" };

/** What a worker's refusal means, for the caller's message. */
const REFUSED: Record<RefusedReason, string> = {
  unsigned: "it was not signed",
  signature:
    "its signature does not verify with the worker's pool key: are callers and workers given the same key?",
  stale: "its timestamp is too far from the worker's clock: are both clocks set right?",
  replayed: "the worker took a call with its id before",
};

/** How often a waiting call looks at its clocks. */
const TICK_MS = 100;

/** One call in flight: the claim rule, the beats, the stop, and the one answer. */
class PendingCall {
  readonly answer: Promise<PoolAnswer>;
  readonly #resolve: (answer: PoolAnswer) => void;
  #stage: Stage;
  /** The last worker that ran the call (or refused it for another manifest), for the answer. */
  #worker?: string;
  /** Workers that run another manifest. */
  readonly #mismatches = new Set<string>();
  /** Workers that refused the call, and why (unsigned news: only ever shown, never acted on). */
  readonly #refusals = new Map<string, RefusedReason>();
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #onAbort = () => this.#stop();
  /** A toolgate/1 tool's questions and events, from the worker that runs it. */
  readonly #relay: CallerRelay;
  #inbox: Promise<void> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly request: PoolRequest,
    readonly shown: string,
    readonly nc: NatsConnection,
    readonly key: PoolSigningKey,
    readonly manifest: string,
  ) {
    const { promise, resolve } = Promise.withResolvers<PoolAnswer>();
    this.answer = promise;
    this.#resolve = resolve;
    this.#stage = { name: "queued", until: performance.now() + request.startWithinMs };
    this.#relay = new CallerRelay({
      id,
      target: request.relay,
      key,
      publish: (s, data) => nc.publish(s, data),
    });
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
    request.signal?.addEventListener("abort", this.#onAbort, { once: true });
    if (request.signal?.aborted) this.#stop();
  }

  /**
   * A message on the call's reply subject. Only a worker holding the pool's key is heeded: anything unsigned or
   * mis-signed is dropped unanswered (a refusal, unsigned by nature, is only remembered for the message).
   * Handled one after the other as they came: a tool's events never follow its result.
   */
  receive(msg: Msg): Promise<void> {
    return this.#inbox = this.#inbox.then(() => this.#receive(msg)).catch(() => {});
  }

  async #receive(msg: Msg): Promise<void> {
    const reply = readReply(msg.data);
    if (reply === undefined || reply.id !== this.id) return;
    if (reply.t === "refused") {
      this.#refusals.set(reply.worker, reply.reason);
      return;
    }
    if (!await verified(this.key, "reply", { ...reply })) return;
    switch (reply.t) {
      case "claim": {
        const go = this.#claim(reply);
        const answer: ClaimAnswer = await signed(this.key, "go", {
          go,
          id: this.id,
          worker: reply.worker,
          nonce: reply.nonce,
        });
        msg.respond(encode(answer));
        return;
      }
      case "mismatch":
        this.#mismatches.add(reply.worker);
        msg.respond(encode({}));
        return;
      case "beat":
        if (
          this.#stage.name === "running" && this.#stage.worker === reply.worker && reply.n > this.#stage.beats
        ) {
          this.#stage.lastBeat = performance.now();
          this.#stage.beats = reply.n;
        }
        return;
      case "ask":
      case "event":
        return this.#relay.take(reply, this.#stage.name === "running" ? this.#stage : undefined, msg);
      case "result": {
        msg.respond(encode({}));
        this.#worker = reply.worker;
        const envelope = receivedEnvelope(reply.envelope) ??
          failure(
            "execution_error",
            `The worker ${reply.worker} answered with something that is not an envelope.`,
            {
              tool: this.request.tool,
              retryable: false,
            },
          );
        this.finish(envelope);
      }
    }
  }

  /**
   * The go for a worker: a waiting call runs (once); while a worker runs it, another is told to wait (a read-only
   * call, which it may take up should that worker die) or to drop it; once the call has an answer, nobody runs it.
   */
  #claim(claim: ClaimMessage): ClaimAnswer["go"] {
    const stage = this.#stage;
    if (stage.name === "queued" || (stage.name === "lost" && this.request.readOnly)) {
      this.#worker = claim.worker;
      this.#stage = {
        name: "running",
        worker: claim.worker,
        control: claim.control,
        lastBeat: performance.now(),
        beats: 0,
      };
      return "yes";
    }
    if (stage.name === "running" && this.request.readOnly) return "later";
    return "no";
  }

  #tick(): void {
    const stage = this.#stage;
    const now = performance.now();
    if (stage.name === "queued" && now > stage.until) {
      this.finish(this.#noWorker());
    } else if (stage.name === "running" && now - stage.lastBeat > POOL.heartbeatMs * POOL.missedBeats) {
      if (!this.request.readOnly) {
        this.finish(failure(
          "unavailable",
          `The worker ${stage.worker} stopped answering while it ran the call: the call may have run, in full ` +
            `or in part, and is not run again. Check what it did before running it again.`,
          { tool: this.request.tool, retryable: false },
        ));
        return;
      }
      // A read-only call: the stream hands it to another worker once the dead one's hold on it lapses.
      this.#stage = {
        name: "lost",
        worker: stage.worker,
        until: now + POOL.ackWaitMs + this.request.startWithinMs,
      };
    } else if (stage.name === "lost" && now > stage.until) {
      this.finish(failure(
        "unavailable",
        `The worker ${stage.worker} stopped answering while it ran the call, and no other worker took it up in ` +
          `time; the call has no side effects and may be run again.`,
        { tool: this.request.tool },
      ));
    } else if (stage.name === "stopping" && now > stage.until) {
      this.finish(this.#stopped(
        `The call was stopped; its worker ${stage.worker} did not confirm that its processes ended.`,
      ));
    }
  }

  /** The caller stopped the call: one not taken yet never runs; one running is stopped on its worker. */
  #stop(): void {
    const stage = this.#stage;
    if (stage.name === "queued" || stage.name === "lost") {
      this.finish(this.#stopped(
        this.request.readOnly
          // A worker starts a read-only call while its go travels, and stops it when the go is no.
          ? "The call was stopped before a worker took it; it is read-only, so nothing it may have started changed anything."
          : "The call was stopped before a worker ran it; nothing ran.",
      ));
    } else if (stage.name === "running") {
      const byUser = stoppedByUser(this.request.signal);
      const control = stage.control;
      void signed(this.key, "cancel", { t: "cancel", id: this.id, byUser }).then((cancel) =>
        this.nc.publish(control, encode(cancel))
      );
      // The worker answers with the stopped call's envelope once its tree is gone (within the kill grace).
      this.#stage = {
        name: "stopping",
        worker: stage.worker,
        until: performance.now() + this.request.defaults.graceMs + POOL.answerMs + POOL.heartbeatMs,
      };
    }
  }

  /** The envelope of a stop the worker did not answer, or that came before any worker. */
  #stopped(message: string): FailureEnvelope {
    return stoppedByUser(this.request.signal)
      ? userStopped(this.request.tool, {}, message)
      : failure("execution_error", message, { tool: this.request.tool, metadata: { cancelled: true } });
  }

  /** Nobody ran the call in time: no worker at all, none with this caller's manifest, or none that took it. */
  #noWorker(): FailureEnvelope {
    const seconds = Math.round(this.request.startWithinMs / 100) / 10;
    if (this.#mismatches.size > 0) {
      const [worker] = this.#mismatches;
      return failure(
        "unavailable",
        `No worker of the pool at ${this.shown} runs this caller's tools: worker ${worker} serves another ` +
          `manifest than this caller's (${
            shortHash(this.manifest)
          }; the worker's log names its own). Start ` +
          `the workers with the same tools.json as the caller. The call did not run.`,
        { tool: this.request.tool, retryable: false },
      );
    }
    if (this.#refusals.size > 0) {
      const [worker, reason] = [...this.#refusals][0];
      return failure(
        "unavailable",
        `No worker of the pool at ${this.shown} took the call: worker ${worker} refused it (${
          REFUSED[reason]
        }). ` +
          `The call did not run.`,
        { tool: this.request.tool, retryable: false },
      );
    }
    return failure(
      "unavailable",
      `No worker of the pool at ${this.shown} took the call within ${seconds} s; it did not run. Workers may ` +
        `all be busy or none may be running: retry later.`,
      { tool: this.request.tool },
    );
  }

  /** The call's one answer: whatever comes after it (a late result, a claim) is turned away. */
  finish(envelope: Envelope): void {
    if (this.#stage.name === "done") return;
    this.#stage = { name: "done" };
    this.#relay.close();
    this.#resolve({ id: this.id, worker: this.#worker, envelope });
  }

  dispose(): void {
    clearInterval(this.#timer);
    this.request.signal?.removeEventListener("abort", this.#onAbort);
  }
}
