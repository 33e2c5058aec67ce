/**
 * The worker's side of the pool: takes calls from the work-queue stream, `concurrency` at a time, and runs each
 * through the very executor a local call goes through (preflight, sandbox, limits, audit, envelope). A call runs
 * only with its caller's go; a read-only call is acknowledged once answered (should the worker die, the stream
 * hands it to another), any other call before it runs (it is never handed out twice).
 *
 * @module
 */
import { createInbox, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { type Consumer, jetstream, type JsMsg } from "@nats-io/jetstream";
import type { Envelope } from "../contract.ts";
import type { Executor } from "../executor.ts";
import { UserStop } from "../stop.ts";
import {
  type BeatMessage,
  type CallMessage,
  type ClaimMessage,
  encode,
  type MismatchMessage,
  POOL,
  readCall,
  readCancel,
  readClaimAnswer,
  type ResultMessage,
  shortHash,
} from "./protocol.ts";

/**
 * How a worker runs.
 *
 * @example
 * ```ts ignore
 * import { PoolWorker } from "./worker.ts";
 * // const worker = new PoolWorker({ nc, executor, manifest: await manifestHash(m), name: "build-1", concurrency: 4, log: console.error });
 * ```
 */
export interface WorkerOptions {
  readonly nc: NatsConnection;
  /** Runs the calls: the worker's own executor (its sandbox, its audit log, its workspace). */
  readonly executor: Executor;
  /** The hash of the executor's manifest: a call made against another one is never run here. */
  readonly manifest: string;
  /** The worker's name in messages and audit lines. */
  readonly name: string;
  /** The most calls run at once. */
  readonly concurrency: number;
  /** Where the worker says what it did not run, and why. */
  readonly log: (line: string) => void;
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
  readonly #controlSubject = createInbox();

  constructor(options: WorkerOptions) {
    this.#options = options;
  }

  /** How many calls run here now. */
  get running(): number {
    return this.#running.size;
  }

  /** Starts taking calls; throws when the stream's consumer cannot be had. */
  async start(): Promise<void> {
    const { nc, concurrency } = this.#options;
    this.#control = nc.subscribe(this.#controlSubject, {
      callback: (_error, msg) => {
        const cancel = readCancel(msg.data);
        if (cancel === undefined) return;
        this.#running.get(cancel.id)?.abort(
          cancel.byUser ? new UserStop("stopped by the caller's user") : undefined,
        );
      },
    });
    const consumer = await jetstream(nc).consumers.get(POOL.stream, POOL.consumer);
    this.#loops = Array.from({ length: concurrency }, () => this.#loop(consumer));
  }

  /** Takes no more calls and waits for those running to end (a call still waiting for a pull is not taken). */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#loops);
    this.#control?.unsubscribe();
  }

  /** Stops every call running here (the second Ctrl-C): their trees end, and their callers get the envelopes. */
  cancelAll(): void {
    for (const controller of this.#running.values()) controller.abort(new UserStop("the worker was stopped"));
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
    const { executor, name, manifest, log } = this.#options;
    const read = readCall(msg.data);
    if (!read.ok) {
      log(`dropped a message that is not a call (${read.problem})`);
      msg.term();
      return;
    }
    const call = read.call;
    if (call.manifest !== manifest) {
      // Never a wrong run: the caller hears which manifest runs here, and another worker may take the call.
      const mismatch: MismatchMessage = { t: "mismatch", id: call.id, worker: name, manifest };
      const heard = await this.#ask(call.reply, mismatch) !== undefined;
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
    const claim: ClaimMessage = { t: "claim", id: call.id, worker: name, control: this.#controlSubject };
    const answer = await this.#ask(call.reply, claim);
    const go = answer === undefined ? "no" : readClaimAnswer(answer);
    if (go !== "yes") {
      if (go === "later") msg.nak(POOL.heartbeatMs);
      else msg.term();
      return;
    }
    const readOnly = executor.manifest.byName.get(call.tool)?.readOnly === true;
    // At most once: the stream forgets a call with side effects before it runs, so none can run it again.
    if (!readOnly) await msg.ackAck().catch(() => false);
    const envelope = await this.#run(call, readOnly ? msg : undefined);
    await this.#deliver(call, envelope);
    if (readOnly) msg.ack();
  }

  /** Runs a call through the executor, beating all the while (and, for a read-only call, holding it at the stream). */
  async #run(call: CallMessage, held: JsMsg | undefined): Promise<Envelope> {
    const { executor, nc, name } = this.#options;
    const controller = new AbortController();
    this.#running.set(call.id, controller);
    const beat: BeatMessage = { t: "beat", id: call.id, worker: name };
    const beating = setInterval(() => {
      held?.working();
      nc.publish(call.reply, encode(beat));
    }, POOL.heartbeatMs);
    try {
      const prepared = await executor.prepare(call.tool, call.args);
      if (!prepared.ok) return prepared.envelope;
      return await executor.run(prepared.call, {
        signal: controller.signal,
        defaults: call.defaults,
        callId: call.id,
      });
    } finally {
      clearInterval(beating);
      this.#running.delete(call.id);
    }
  }

  /** Hands the envelope to the caller, trying again while it does not confirm (and giving up once it is gone). */
  async #deliver(call: CallMessage, envelope: Envelope): Promise<void> {
    const result: ResultMessage = { t: "result", id: call.id, worker: this.#options.name, envelope };
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = await this.#request(call.reply, result);
      if (outcome !== "timeout") return;
    }
    this.#options.log(`the caller of ${call.id} (${call.tool}) did not confirm its answer`);
  }

  /** A request to a caller: its answer, or `undefined` when it is gone or silent. */
  async #ask(subject: string, message: unknown): Promise<Uint8Array | undefined> {
    const outcome = await this.#request(subject, message);
    return outcome instanceof Uint8Array ? outcome : undefined;
  }

  async #request(subject: string, message: unknown): Promise<Uint8Array | "gone" | "timeout"> {
    try {
      return (await this.#options.nc.request(subject, encode(message), { timeout: POOL.answerMs })).data;
    } catch (error) {
      const noResponders = (error as { isNoResponders?: () => boolean }).isNoResponders?.() === true;
      return noResponders ? "gone" : "timeout";
    }
  }
}
