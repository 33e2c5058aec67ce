/**
 * One HTTP session's record of the SSE events it sent, so that a client whose stream ended mid-call can resume it
 * with `Last-Event-ID` (MCP Streamable HTTP resumability). The session's transport (`session_transport.ts`) keeps
 * each event here and replays from it; the store is bounded (so a client cannot grow the server's memory by opening streams or by
 * never resuming them) and belongs to one session (so an event id means nothing to any other session: the
 * other session's store does not hold it).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { JSONRPCMessage } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";

/** How much one session keeps for resumption. */
export interface EventLimits {
  /** The most events kept for one stream; past it, the stream's oldest go. */
  readonly perStream: number;
  /** The most events kept for the whole session; past it, the session's oldest go. */
  readonly perSession: number;
  /** The most bytes (of the messages' JSON) kept for the session; past it, the oldest go (the newest stays). */
  readonly bytesPerSession: number;
}

/**
 * The default {@linkcode EventLimits}: ample for a call's progress, logs, questions and result.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EVENT_LIMITS } from "./event_store.ts";
 * assert.equal(EVENT_LIMITS.perStream, 256);
 * ```
 */
export const EVENT_LIMITS: EventLimits = { perStream: 256, perSession: 1024, bytesPerSession: 4 << 20 };

interface Stored {
  readonly streamId: string;
  readonly message: JSONRPCMessage;
  readonly bytes: number;
}

/**
 * A bounded, in-memory event store for one session. Eviction is oldest first, per stream and per
 * session, so an event that is still kept has every later event of its stream kept too: a resume from a kept id
 * loses nothing, and a resume from an evicted (or unknown, or another session's) id is refused rather than
 * answered with a gap.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionEventStore } from "./event_store.ts";
 * const store = new SessionEventStore();
 * const first = store.store("s1", { jsonrpc: "2.0", method: "notifications/progress" });
 * store.store("s1", { jsonrpc: "2.0", id: 1, result: {} });
 * assert.equal(store.streamOf(first), "s1");
 * assert.equal(store.after(first).length, 1);
 * assert.equal(store.streamOf("elsewhere.7"), undefined);
 * ```
 */
export class SessionEventStore {
  readonly #limits: EventLimits;
  /** Every kept event, oldest first (a Map keeps insertion order). */
  readonly #events = new Map<string, Stored>();
  /** Each stream's kept event ids, oldest first. */
  readonly #streams = new Map<string, string[]>();
  #bytes = 0;
  #next = 0;
  #closed = false;

  constructor(limits: EventLimits = EVENT_LIMITS) {
    this.#limits = limits;
  }

  /** How many events are kept (for tests and diagnostics). */
  get size(): number {
    return this.#events.size;
  }

  /** How many bytes of messages are kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Keeps `message` as the next event of `streamId` and returns its id (`{}`: a stream's priming event, which
   * carries no message).
   */
  store(streamId: string, message: JSONRPCMessage | Record<string, never>): string {
    // The id names its stream and a number that only grows: nothing in it is secret, and it is only ever looked
    // up in this session's store.
    const eventId = `${streamId}.${this.#next++}`;
    if (this.#closed) return eventId;
    const bytes = JSON.stringify(message).length;
    this.#events.set(eventId, { streamId, message: message as JSONRPCMessage, bytes });
    this.#bytes += bytes;
    const ids = this.#streams.get(streamId) ?? [];
    ids.push(eventId);
    this.#streams.set(streamId, ids);
    while (ids.length > this.#limits.perStream) this.#drop(ids[0]);
    while (
      this.#events.size > this.#limits.perSession ||
      (this.#bytes > this.#limits.bytesPerSession && this.#events.size > 1)
    ) {
      this.#drop(this.#events.keys().next().value as string);
    }
    return eventId;
  }

  /** The stream of a kept event; undefined for an id not kept (evicted, unknown, another session's). */
  streamOf(eventId: string): string | undefined {
    return this.#events.get(eventId)?.streamId;
  }

  /**
   * The kept events of `lastEventId`'s stream after it, oldest first, as id and message (a priming event, which
   * carries none, left out); none for an id not kept.
   */
  after(lastEventId: string): [string, JSONRPCMessage][] {
    const streamId = this.streamOf(lastEventId);
    if (streamId === undefined) return [];
    const ids = this.#streams.get(streamId) ?? [];
    return ids.slice(ids.indexOf(lastEventId) + 1).flatMap((id) => {
      const stored = this.#events.get(id);
      return stored === undefined || Object.keys(stored.message).length === 0 ? [] : [[id, stored.message]];
    });
  }

  /** Forgets every event, and keeps none from now on: the session ended. */
  clear(): void {
    this.#closed = true;
    this.#events.clear();
    this.#streams.clear();
    this.#bytes = 0;
  }

  #drop(eventId: string): void {
    const stored = this.#events.get(eventId);
    if (stored === undefined) return;
    this.#events.delete(eventId);
    this.#bytes -= stored.bytes;
    const ids = this.#streams.get(stored.streamId);
    if (ids === undefined) return;
    // Eviction is always of a stream's oldest event.
    if (ids[0] === eventId) ids.shift();
    else ids.splice(ids.indexOf(eventId), 1);
    if (ids.length === 0) this.#streams.delete(stored.streamId);
  }
}
