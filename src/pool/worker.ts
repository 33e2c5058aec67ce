/**
 * The worker's side of the pool: takes calls from the work-queue stream, `concurrency` at a time, and runs each
 * through the very executor a local call goes through (preflight, sandbox, limits, audit, envelope). A call runs
 * only when signed with the pool's key, fresh and new to this worker; a call with side effects waits for its
 * caller's signed go, a read-only one starts while the go travels and is stopped without it. A read-only
 * call is acknowledged once answered (should the worker die, the stream hands it to another), any other call
 * before it runs (it is never handed out twice). A refused call is answered with the reason only: never the
 * worker's manifest or its hash.
 *
 * @module
 */
import { createInbox, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { type Consumer, jetstream, type JsMsg } from "@nats-io/jetstream";
import type { Envelope } from "../contract.ts";
import type { Executor } from "../run/executor.ts";
import { UserStop } from "../process/stop.ts";
import {
  type BeatMessage,
  encode,
  POOL,
  readCall,
  readCancel,
  type RefusedReason,
  shortHash,
  type UncheckedCall,
} from "./protocol.ts";
import { ReplayGuard } from "./replay_guard.ts";
import { type PoolSigningKey, signed, verified } from "./signing.ts";
import { CallerReplies, type Go } from "./caller_replies.ts";
import { WorkerRelay } from "./question_relay.ts";
import type { CallWatch } from "../run/call_watch.ts";
import type { TraceCarrier } from "../run/tracing.ts";
import { carrierOfHeaders } from "./trace_headers.ts";

/**
 * How a worker runs.
 *
 * @example
 * ```ts ignore
 * import { PoolWorker } from "./worker.ts";
 * // const worker = new PoolWorker({ nc, executor, manifest: await manifestHash(m), key, name: "build-1", concurrency: 4, log: console.error });
 * ```
 */
export interface WorkerOptions {
  readonly nc: NatsConnection;
  /** Runs the calls: the worker's own executor (its sandbox, its audit log, its workspace). */
  readonly executor: Executor;
  /** The hash of the executor's manifest: a call made against another one is never run here. */
  readonly manifest: string;
  /** The pool's key: a call (and a go, a cancel) not signed with it is never heeded; replies are signed with it. */
  readonly key: PoolSigningKey;
  /** The clock calls' timestamps are held against (ms since the epoch; default `Date.now`). */
  readonly now?: () => number;
  /** The worker's name in messages and audit lines. */
  readonly name: string;
  /** The most calls run at once. */
  readonly concurrency: number;
  /** Where the worker says what it did not run, and why. */
  readonly log: (line: string) => void;
  /** Who watches the calls run here (`worker --console`). */
  readonly watch?: CallWatch;
}

/** How long one pull for a call waits at the server before it asks again. */
const PULL_MS = 5_000;

/**
 * A worker of the pool.
 *
 * @example
 * ```ts ignore
 * import { PoolWorker } from "./worker.ts";
 * // const worker = new PoolWorker(options);
 * // await worker.start(); ... await worker.stop();
 * ```
 */
export class PoolWorker {
  readonly #options: WorkerOptions;
  /** The calls running here, by id: a cancellation stops one. */
  readonly #running = new Map<string, AbortController>();
  #control?: Subscription;
  #stopping = false;
  #loops: Promise<void>[] = [];
  /** The answers being handed to their callers: the slot that ran each call already took the next. */
  readonly #delivering = new Set<Promise<void>>();
  readonly #controlSubject = createInbox();
  readonly #guard = new ReplayGuard({ skewMs: POOL.clockSkewMs, capacity: POOL.maxSeenIds });
  readonly #now: () => number;
  /** The calls' questions to their callers, and the callers' answers. */
  readonly #relay: WorkerRelay;
  /** What this worker says to its calls' callers: refusals, claims, answers. */
  readonly #replies: CallerReplies;

  constructor(options: WorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#relay = new WorkerRelay({ nc: options.nc, key: options.key, name: options.name });
    this.#replies = new CallerReplies(options);
  }

  /** How many calls run here now. */
  get running(): number {
    return this.#running.size;
  }

  /** Starts taking calls; throws when the stream's consumer cannot be had. */
  async start(): Promise<void> {
    const { nc, concurrency } = this.#options;
    this.#control = nc.subscribe(this.#controlSubject, {
      callback: (_error, msg) => void this.#cancel(msg.data),
    });
    const consumer = await jetstream(nc).consumers.get(POOL.stream, POOL.consumer);
    this.#loops = Array.from({ length: concurrency }, () => this.#loop(consumer));
  }

  /** A cancel (or a question's answer) on the control subject: heeded only when its caller signed it. */
  async #cancel(data: Uint8Array): Promise<void> {
    if (await this.#relay.receive(data)) return;
    const cancel = readCancel(data);
    if (cancel === undefined || !await verified(this.#options.key, "cancel", { ...cancel })) return;
    this.#running.get(cancel.id)?.abort(
      cancel.byUser ? new UserStop("stopped by the caller's user") : undefined,
    );
  }

  /**
   * Takes no more calls and waits for those running to end and their answers to be handed over (a call still
   * waiting for a pull is not taken).
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#loops);
    await Promise.all(this.#delivering);
    this.#control?.unsubscribe();
  }

  /** Stops every call running here (the second Ctrl-C): their trees end, and their callers get the envelopes. */
  cancelAll(reason: unknown = new UserStop("the worker was stopped")): void {
    for (const controller of this.#running.values()) controller.abort(reason);
  }

  /** One slot: pulls a call, runs it, pulls the next. */
  async #loop(consumer: Consumer): Promise<void> {
    while (!this.#stopping) {
      let msg: JsMsg | null;
      try {
        msg = await consumer.next({ expires: PULL_MS });
      } catch (error) {
        if (this.#stopping || this.#options.nc.isClosed()) return;
        this.#options.log(`cannot pull a call: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, POOL.heartbeatMs));
        continue;
      }
      if (msg === null) continue;
      if (this.#stopping) {
        // Taken as the worker stopped: another worker gets it at once.
        msg.nak();
        return;
      }
      try {
        await this.#handle(msg);
      } catch (error) {
        // A bug must not take the slot down with it: the call is left to the stream (and its caller's rules).
        this.#options.log(`a call failed in the worker: ${(error as Error).stack ?? error}`);
      }
    }
  }

  async #handle(msg: JsMsg): Promise<void> {
    const { executor, manifest, log, key } = this.#options;
    const read = readCall(msg.data);
    if (!read.ok) {
      log(`dropped a message that is not a call (${read.reason})`);
      msg.term();
      return;
    }
    const call = read.call;
    // Who signed it first (nothing of an unsigned call is remembered), then its age and id.
    const refusal: RefusedReason | "full" | undefined = call.sig === undefined
      ? "unsigned"
      : !await verified(key, "call", { ...call })
      ? "signature"
      : this.#fresh(call, msg.seq);
    if (refusal === "full") {
      // Too many calls taken within the freshness window to remember another: it waits, unchecked calls never run.
      log(`call ${call.id} waits: ${POOL.maxSeenIds} calls were taken within the freshness window`);
      msg.nak(POOL.heartbeatMs);
      return;
    }
    if (refusal !== undefined) {
      await this.#replies.refuse(call, refusal);
      msg.term();
      return;
    }
    if (call.manifest !== manifest) {
      // Never a wrong run: the caller hears that another manifest runs here (not which), and another worker may
      // take the call.
      const heard = await this.#replies.mismatch(call);
      if (!msg.redelivered) {
        log(
          `call ${call.id} (${call.tool}) was made for manifest ${
            shortHash(call.manifest)
          }; this worker serves ` +
            `${shortHash(manifest)}: not run here`,
        );
      }
      if (heard) msg.nak(POOL.heartbeatMs);
      else msg.term();
      return;
    }
    // Never rejects (a go that cannot be had is no): a started call waits on it too.
    const going = this.#replies.claim(call, this.#controlSubject);
    // Read-only by this worker's own manifest (never by the caller's word): the call runs while its go travels, as
    // running it more than once does nothing; should the go be anything but yes, it is stopped and its answer
    // dropped. A call with side effects is made ready (its sandbox started, held at its gate) but nothing of its
    // tool runs before the go says yes and the stream has forgotten it: at most once, none can run it again.
    // That is asked while the go travels: such a call is never handed out again whatever its go.
    const readOnly = executor.manifest.byName.get(call.tool)?.readOnly === true;
    const forgotten = readOnly ? undefined : msg.ackAck().catch(() => false);
    const running = this.#run(
      call,
      readOnly ? msg : undefined,
      carrierOfHeaders(msg.headers),
      going,
      forgotten,
    );
    const go = await going;
    if (go !== "yes") {
      await running.catch(() => {});
      await forgotten;
      if (go === "later") msg.nak(POOL.heartbeatMs);
      else msg.term();
      return;
    }
    const envelope = await running;
    // The slot is free once the tool ended: it pulls the next call while the answer travels (the caller's receipt
    // takes a round trip). A read-only call is still acknowledged only once its caller has its answer.
    const delivering = this.#replies.deliver(call, envelope).then(() => {
      if (readOnly) msg.ack();
    }).catch((error) => this.#options.log(`a call's answer failed in the worker: ${error}`)).finally(() =>
      this.#delivering.delete(delivering)
    );
    this.#delivering.add(delivering);
  }

  /** Whether a signed call is fresh and new here (see {@linkcode ReplayGuard}); `undefined` when it is. */
  #fresh(call: UncheckedCall, seq: number): RefusedReason | "full" | undefined {
    const freshness = this.#guard.check({ id: call.id, seq, ts: call.ts, wait: call.wait }, this.#now());
    return freshness === "fresh" ? undefined : freshness;
  }

  /**
   * Runs a call through the executor while its go (`going`) travels, beating all the while (and, for a read-only
   * call, holding it at the stream): it is stopped should the go be anything but yes. With `forgotten` (a call with
   * side effects), nothing of the tool runs before the go says yes and the stream has forgotten the call.
   */
  async #run(
    call: UncheckedCall,
    held: JsMsg | undefined,
    parent: TraceCarrier,
    going: Promise<Go>,
    forgotten?: Promise<unknown>,
  ): Promise<Envelope> {
    const { executor, nc, name, key } = this.#options;
    // The caller's span goes on here (its context came in the message's headers): this side's span is the take.
    const span = executor.tracing.toolCall({
      tool: call.tool,
      callId: call.id,
      parent,
      role: "consumer",
      subject: POOL.subject,
    });
    let envelope: Envelope | undefined;
    const controller = new AbortController();
    this.#running.set(call.id, controller);
    going.then((go) => {
      if (go !== "yes") controller.abort(new Error("the caller did not give this worker the go"));
    });
    // Told after the abort above (in that order on the same promise), as the executor asks.
    const goAhead = forgotten && going.then(async (go) => go === "yes" && (await forgotten, true));
    let count = 0;
    const beating = setInterval(async () => {
      held?.working();
      // Numbered: a beat recorded and sent again is not taken for a live worker.
      const beat: BeatMessage = await signed(key, "reply", {
        t: "beat",
        id: call.id,
        worker: name,
        n: ++count,
      });
      if (!nc.isClosed()) nc.publish(call.reply, encode(beat));
    }, POOL.heartbeatMs);
    // A toolgate/1 tool's questions go to the caller, its log and progress too (all sent before the result).
    const relay = this.#relay.forCall(call);
    const seen = this.#options.watch?.started({
      tool: call.tool,
      caller: `pool call ${call.id.slice(0, 8)}`,
      args: argumentsOf(call.args),
      stop: () => controller.abort(new UserStop("stopped in the worker's console")),
    });
    try {
      const prepared = await executor.prepare(call.tool, call.args);
      if (!prepared.ok) {
        seen?.ended(prepared.envelope);
        return envelope = prepared.envelope;
      }
      envelope = await executor.run(prepared.call, {
        signal: controller.signal,
        goAhead,
        defaults: call.defaults,
        callId: call.id,
        questions: relay.questions,
        onToolEvent: seen
          ? (event) => {
            relay.onToolEvent?.(event);
            seen.toolEvent(event);
          }
          : relay.onToolEvent,
        onStderr: seen && ((chunk) => seen.stderr(chunk)),
        trace: span,
      });
      await relay.sent();
      seen?.ended(envelope);
      return envelope;
    } catch (error) {
      seen?.ended(error instanceof Error ? error : new Error(String(error)));
      throw error;
    } finally {
      span.end(envelope === undefined ? "Error" : envelope.ok ? undefined : envelope.kind);
      clearInterval(beating);
      this.#running.delete(call.id);
    }
  }
}

/** A call's arguments as the watcher shows them: the JSON its caller sent, or its text when it is not JSON. */
function argumentsOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
