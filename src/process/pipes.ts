/**
 * A child's pipes: its stdout and stderr read to their end under a cap (or handed to a sink), and its stdin
 * written and closed, or kept open for replies until it exits. The runner (`runner.ts`) owns the child; these
 * only move its bytes.
 *
 * @module
 */

/** What a stream carried: the kept chunks (joined only when asked for), and every byte it carried. */
export interface Drained {
  readonly chunks: readonly Uint8Array[];
  readonly kept: number;
  readonly total: number;
}

/**
 * The kept chunks as one buffer: made once, the chunks let go.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { joined } from "./pipes.ts";
 * const bytes = joined({ chunks: [new Uint8Array([1]), new Uint8Array([2])], kept: 2, total: 2 })();
 * assert.deepEqual(bytes, new Uint8Array([1, 2]));
 * ```
 */
export function joined(drained: Drained): () => Uint8Array {
  let bytes: Uint8Array | undefined;
  let chunks: readonly Uint8Array[] | undefined = drained.chunks;
  return () => {
    if (bytes === undefined) {
      bytes = new Uint8Array(drained.kept);
      let offset = 0;
      for (const chunk of chunks ?? []) {
        bytes.set(chunk, offset);
        offset += chunk.length;
      }
      chunks = undefined;
    }
    return bytes;
  };
}

/**
 * Reads a stream to its end, keeping at most `cap` bytes (none with a sink, which gets every chunk instead); calls
 * `onOverflow` once when it passes the cap, and `progress.onData` and `observe` for every chunk. The chunks are
 * kept as they came: one buffer of them is made only if someone reads it (an overflow's envelope never does), so
 * a flood up to the cap costs the bytes kept once, not twice.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { drain } from "./pipes.ts";
 * const stream = new Blob(["hello"]).stream();
 * const drained = await drain(stream, 3, () => {}, new Promise(() => {}), { reads: 0, onData: () => {} });
 * assert.equal(drained.total, 5); // of which 3 kept
 * ```
 */
export async function drain(
  stream: ReadableStream<Uint8Array>,
  cap: number,
  onOverflow: () => void,
  stop: Promise<void>,
  progress: { reads: number; onData: () => void },
  sink?: (chunk: Uint8Array) => void,
  observe?: (chunk: Uint8Array) => void,
): Promise<Drained> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let total = 0;
  let stopped = false;
  stop.then(() => {
    stopped = true;
    reader.cancel().catch(() => {});
  });
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done || stopped) break;
      progress.reads++;
      progress.onData();
      total += value.length;
      observe?.(value);
      if (sink) {
        sink(value);
        continue;
      }
      if (kept < cap) {
        const take = Math.min(value.length, cap - kept);
        // A part of a chunk is copied, so that the rest of it is not kept alive with it; so is a short read, a
        // view into the runtime's 64 KiB read buffer, whose unused rest would otherwise be kept too (up to twice
        // the bytes kept, measured).
        const whole = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
        chunks.push(take === value.length && whole ? value : value.slice(0, take));
        kept += take;
      }
      if (total > cap) {
        onOverflow();
        // Reading on would only count bytes nobody keeps, and the garbage of a flood piles up faster than it
        // is collected: close the pipe instead, which also stops a writer that ignores SIGTERM.
        await reader.cancel();
        break;
      }
    }
  } catch {
    // A cancelled read ends the stream; what was kept stands.
  }
  return { chunks, kept, total };
}

/** What else a child's stdin is fed with, and when. */
export interface FeedOptions {
  /** Keeps stdin open until `exited`, handing out a writer for more bytes (a tool-protocol reply). */
  readonly replies?: (write: (bytes: Uint8Array) => Promise<boolean>) => void;
  readonly exited?: Promise<unknown>;
  /** Nothing is written before this says true; false: stdin closes unwritten. */
  readonly after?: Promise<boolean>;
}

/**
 * Writes the arguments to a child's stdin and closes it; with `replies`, keeps it open until the child exits and
 * hands out a writer for more (a tool-protocol reply), one write after another; with `after`, writes nothing
 * before it says true.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { feed } from "./pipes.ts";
 * const { writable, readable } = new TransformStream<Uint8Array, Uint8Array>();
 * const read = new Response(readable).text();
 * await feed(writable, new TextEncoder().encode("{}"));
 * assert.equal(await read, "{}");
 * ```
 */
export async function feed(
  stdin: WritableStream<Uint8Array>,
  bytes: Uint8Array,
  { replies, exited, after }: FeedOptions = {},
): Promise<void> {
  const writer = stdin.getWriter();
  try {
    if (after !== undefined && !await after) return await writer.close();
    if (bytes.length > 0) await writer.write(bytes);
    if (replies === undefined || exited === undefined) return await writer.close();
  } catch {
    // A tool may exit without reading its stdin (BrokenPipe): that is its right, not a failure.
    return;
  }
  // Writes one after another, in the order asked; a write after the pipe broke says so instead of throwing.
  let open = true;
  let queue: Promise<boolean> = Promise.resolve(true);
  replies((more) =>
    queue = queue.then(async () => {
      if (!open) return false;
      try {
        await writer.write(more);
        return true;
      } catch {
        open = false;
        return false;
      }
    })
  );
  await exited;
  open = false;
  await queue;
  await writer.close().catch(() => {});
}
