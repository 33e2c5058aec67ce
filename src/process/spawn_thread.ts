/**
 * Tools started from a thread of their own. Deno starts a process on the calling thread, which waits in
 * `posix_spawn` until the child has called `exec`; on a busy machine the child waits for a core, and the thread
 * with it (a millisecond and more per call, measured in `serve` under load: docs/performance.md). A long-lived
 * command (`serve`, a pool's `worker`) starts its tools from this one worker thread instead, so that its main
 * thread goes on answering other calls meanwhile. The worker owns the child and its pipes; the caller gets a
 * {@linkcode ChildHandle}, the same surface as `Deno.ChildProcess` (pid, stdin, stdout, stderr, status, kill), whose
 * bytes cross between the threads as messages (stdout and stderr under a credit, so that a flood waits in the
 * child's pipe, not in the threads' queues). The worker inherits this process's permissions, no more: a program
 * the launcher does not grant is refused there, with the same error class.
 *
 * One piece: the worker's side (`spawnThreadMain`, which runs from its own source text and can import nothing)
 * and the caller's side (`SpawnThread`) are the two ends of one message protocol (spawn, write, close, kill,
 * cancel, credit; spawned, failed, ack, data, end, status): each is read against the other.
 *
 * Not here: what a run does with its child (runner.ts).
 *
 * @module
 */

import { after } from "../base/timer.ts";
import { feed } from "./pipes.ts";

/** What a started process offers its runner: `Deno.ChildProcess`'s surface, which a local start returns as is. */
export interface ChildHandle {
  readonly pid: number;
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly status: Promise<Deno.CommandStatus>;
  kill(signal?: Deno.Signal): void;
}

/** A start, as the runner makes it: piped stdio, the environment given and nothing else. */
export interface SpawnRequest {
  readonly program: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly detached: boolean;
  /**
   * Written to the child's stdin as it starts, which is then closed: the start and its input in one step (across
   * the threads, one message instead of three and their answers). The handle's stdin is closed already. A child
   * that exits without reading it is no error.
   */
  readonly input?: Uint8Array;
}

/** The stdin of a child whose input went with its start: closed; a write is a broken pipe, as after a close. */
function closedStdin(): WritableStream<Uint8Array> {
  return new WritableStream<Uint8Array>({
    write: () => Promise.reject(new Deno.errors.BrokenPipe("the child's stdin is closed")),
  });
}

/** Starts processes: {@linkcode SpawnThread}, or none (the runner then starts on its own thread). */
export interface Spawner {
  /** Starts `request`; rejects with the error `Deno.Command.spawn` throws when it cannot start. */
  spawn(request: SpawnRequest): Promise<ChildHandle>;
}

/**
 * Starts on the calling thread, as `Deno.Command` does: what a run uses without a {@linkcode SpawnThread}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SPAWN_HERE } from "./spawn_thread.ts";
 * const child = await SPAWN_HERE.spawn({ program: "/bin/true", args: [], cwd: "/", env: {}, detached: false });
 * await child.stdin.close();
 * await Promise.all([child.stdout.cancel(), child.stderr.cancel()]);
 * assert.equal((await child.status).code, 0);
 * ```
 */
export const SPAWN_HERE: Spawner = {
  // Async: a start that throws rejects, as the thread's does.
  // deno-lint-ignore require-await
  async spawn(request) {
    const child = new Deno.Command(request.program, {
      args: [...request.args],
      cwd: request.cwd,
      env: { ...request.env },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: request.detached,
    }).spawn();
    const input = request.input;
    if (input === undefined) return child;
    // Written while the caller reads the child's output: a child that reads its stdin only as it writes never
    // waits on a full pipe.
    void feed(child.stdin, input);
    return {
      pid: child.pid,
      stdin: closedStdin(),
      stdout: child.stdout,
      stderr: child.stderr,
      status: child.status,
      kill: (signal?: Deno.Signal) => child.kill(signal),
    };
  },
};

/** Bytes a stream may send past what its reader has taken before it waits (the child's pipe holds the rest). */
const CREDIT_BYTES = 1 << 20;
/** The reader hands back credit in steps of this many bytes (a small output never costs a message). */
const CREDIT_STEP = 256 << 10;
/** How long `close` waits for the processes it killed to be reaped before it ends the thread. */
const CLOSE_WAIT_MS = 2000;

type Stream = "stdout" | "stderr";

/** The worker's side: the children and their pipes. Self-contained: it runs from its own source text. */
function spawnThreadMain(): void {
  const scope = self as unknown as {
    postMessage(message: unknown, transfer?: Transferable[]): void;
    onmessage: ((event: MessageEvent) => void) | null;
  };
  interface Child {
    readonly process: Deno.ChildProcess;
    readonly writer: WritableStreamDefaultWriter<Uint8Array>;
    readonly readers: Record<string, ReadableStreamDefaultReader<Uint8Array>>;
    readonly credit: Record<string, { sent: number; granted: number; wake?: () => void }>;
  }
  const children = new Map<number, Child>();
  const pump = async (id: number, child: Child, stream: "stdout" | "stderr", limit: number) => {
    const reader = child.readers[stream];
    const credit = child.credit[stream];
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) break;
        // A short read is a view into a larger buffer: send its bytes only.
        const whole = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
        const chunk = whole ? value : value.slice();
        credit.sent += chunk.byteLength;
        scope.postMessage({ op: "data", id, stream, chunk }, [chunk.buffer as ArrayBuffer]);
        while (credit.sent - credit.granted > limit) await new Promise<void>((wake) => credit.wake = wake);
      }
    } catch {
      // A cancelled read ends the stream.
    }
    scope.postMessage({ op: "end", id, stream });
  };
  scope.onmessage = (event: MessageEvent) => {
    const message = event.data;
    const id: number = message.id;
    const child = children.get(id);
    switch (message.op) {
      case "spawn": {
        let process: Deno.ChildProcess;
        try {
          process = new Deno.Command(message.program, {
            args: message.args,
            cwd: message.cwd,
            env: message.env,
            clearEnv: true,
            stdin: "piped",
            stdout: "piped",
            stderr: "piped",
            detached: message.detached,
          }).spawn();
        } catch (error) {
          const { name, message: text } = error instanceof Error
            ? error
            : { name: "Error", message: String(error) };
          scope.postMessage({ op: "failed", id, name, message: text });
          return;
        }
        const started: Child = {
          process,
          writer: process.stdin.getWriter(),
          readers: { stdout: process.stdout.getReader(), stderr: process.stderr.getReader() },
          credit: { stdout: { sent: 0, granted: 0 }, stderr: { sent: 0, granted: 0 } },
        };
        children.set(id, started);
        scope.postMessage({ op: "spawned", id, pid: process.pid });
        // The input that came with the start, then the end of it (a child that never reads it is no error).
        if (message.input !== undefined) {
          const input = message.input as Uint8Array;
          (input.length > 0 ? started.writer.write(input) : Promise.resolve())
            .then(() => started.writer.close()).catch(() => {});
        }
        const pumped = Promise.all([
          pump(id, started, "stdout", message.credit),
          pump(id, started, "stderr", message.credit),
        ]);
        void process.status.then(async (status) => {
          scope.postMessage({
            op: "status",
            id,
            success: status.success,
            code: status.code,
            signal: status.signal,
          });
          await pumped;
          // Its stdin goes with it: a later close is a success, a later write a broken pipe, as with a local child.
          started.writer.close().catch(() => {});
          children.delete(id);
        });
        return;
      }
      case "write":
      case "close": {
        const done = (ok: boolean) => scope.postMessage({ op: "ack", id, seq: message.seq, ok });
        if (child === undefined) return done(message.op === "close");
        const step = message.op === "write" ? child.writer.write(message.chunk) : child.writer.close();
        step.then(() => done(true), () => done(false));
        return;
      }
      case "kill":
        try {
          child?.process.kill(message.signal);
        } catch {
          // Gone already.
        }
        return;
      case "cancel":
        child?.readers[message.stream].cancel().catch(() => {});
        return;
      case "credit": {
        const credit = child?.credit[message.stream];
        if (credit === undefined) return;
        credit.granted += message.bytes;
        credit.wake?.();
        credit.wake = undefined;
        return;
      }
    }
  };
}

/** One child as the caller's thread sees it: its streams' controllers and what it waits for. */
interface Remote {
  readonly streams: Record<Stream, ReadableStreamDefaultController<Uint8Array> | undefined>;
  /** Bytes received per stream since the last credit was handed back. */
  readonly unacked: Record<Stream, number>;
  readonly acks: Map<number, (ok: boolean) => void>;
  started: (pid: number) => void;
  failed: (error: Error) => void;
  ended: (status: Deno.CommandStatus) => void;
  /** Resolves with the status the worker reported (or the one its failure stands in for). */
  readonly exited: Promise<Deno.CommandStatus>;
  /** Set once the status came. */
  done: boolean;
  /** The start carried the child's input: its stdin is closed already. */
  inputSent?: boolean;
}

/**
 * One worker thread that starts processes and owns their pipes; {@linkcode close} ends it, and kills what still
 * runs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SpawnThread } from "./spawn_thread.ts";
 * const thread = new SpawnThread();
 * const child = await thread.spawn({ program: "/bin/echo", args: ["hi"], cwd: "/", env: {}, detached: false });
 * await child.stdin.close();
 * const [out, status] = await Promise.all([new Response(child.stdout).text(), child.status, child.stderr.cancel()]);
 * assert.equal(out, "hi\n");
 * assert.equal(status.code, 0);
 * await thread.close();
 * ```
 */
export class SpawnThread implements Spawner {
  readonly #worker: Worker;
  readonly #remotes = new Map<number, Remote>();
  #next = 0;
  #seq = 0;
  /** Set when the worker failed: every start is refused from then on, with this. */
  #broken?: Error;
  #closing?: Promise<void>;

  constructor() {
    const source = `(${spawnThreadMain.toString()})();`;
    const url = URL.createObjectURL(new Blob([source], { type: "application/javascript" }));
    this.#worker = new Worker(url, { type: "module" });
    URL.revokeObjectURL(url);
    this.#worker.onmessage = (event: MessageEvent) => this.#receive(event.data);
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#fail(new Error(`toolgate: the spawn thread failed: ${event.message}`));
    };
  }

  spawn(request: SpawnRequest): Promise<ChildHandle> {
    if (this.#broken !== undefined) return Promise.reject(this.#broken);
    if (this.#closing !== undefined) return Promise.reject(new Error("toolgate: the spawn thread is closed"));
    const id = this.#next++;
    const { promise, resolve, reject } = Promise.withResolvers<ChildHandle>();
    const status = Promise.withResolvers<Deno.CommandStatus>();
    const post = (message: Record<string, unknown>, transfer: Transferable[] = []) =>
      this.#worker.postMessage({ ...message, id }, transfer);
    const remote: Remote = {
      streams: { stdout: undefined, stderr: undefined },
      unacked: { stdout: 0, stderr: 0 },
      acks: new Map(),
      started: (pid) => resolve(this.#handle(id, pid, remote, status.promise, post)),
      failed: (error) => {
        this.#remotes.delete(id);
        reject(error);
      },
      ended: (value) => status.resolve(value),
      exited: status.promise,
      done: false,
      inputSent: request.input !== undefined,
    };
    this.#remotes.set(id, remote);
    // A copy crosses: the caller keeps its buffer.
    const input = request.input?.slice();
    post({
      op: "spawn",
      program: request.program,
      args: [...request.args],
      cwd: request.cwd,
      env: { ...request.env },
      detached: request.detached,
      credit: CREDIT_BYTES,
      input,
    }, input === undefined ? [] : [input.buffer as ArrayBuffer]);
    return promise;
  }

  /** Kills every process still running, waits a moment for their ends, and ends the thread. */
  close(): Promise<void> {
    return this.#closing ??= (async () => {
      const live = [...this.#remotes.entries()].filter(([, remote]) => !remote.done);
      for (const [id] of live) this.#worker.postMessage({ op: "kill", id, signal: "SIGKILL" });
      let cancel = () => {};
      await Promise.race([
        Promise.all(live.map(([, remote]) => remote.exited)),
        new Promise<void>((wake) => cancel = after(CLOSE_WAIT_MS, wake)),
      ]);
      cancel();
      this.#worker.terminate();
      this.#fail(new Error("toolgate: the spawn thread is closed"));
    })();
  }

  #handle(
    id: number,
    pid: number,
    remote: Remote,
    status: Promise<Deno.CommandStatus>,
    post: (message: Record<string, unknown>, transfer?: Transferable[]) => void,
  ): ChildHandle {
    const acked = (message: Record<string, unknown>, transfer: Transferable[] = []) => {
      // A child forgotten already is gone, its stdin with it: a close is done, a write is a broken pipe.
      if (this.#remotes.get(id) !== remote) {
        return message.op === "close"
          ? Promise.resolve()
          : Promise.reject(new Deno.errors.BrokenPipe("the child's stdin is closed"));
      }
      const seq = this.#seq++;
      const { promise, resolve } = Promise.withResolvers<boolean>();
      remote.acks.set(seq, resolve);
      post({ ...message, seq }, transfer);
      return promise.then((ok) => {
        if (!ok) throw new Deno.errors.BrokenPipe("the child's stdin is closed");
      });
    };
    const readable = (stream: Stream) =>
      new ReadableStream<Uint8Array>({
        start: (controller) => void (remote.streams[stream] = controller),
        cancel: () => {
          remote.streams[stream] = undefined;
          post({ op: "cancel", stream });
        },
      });
    return {
      pid,
      stdin: remote.inputSent ? closedStdin() : new WritableStream<Uint8Array>({
        // A copy crosses: the caller keeps its buffer.
        write: (chunk) => {
          const copy = chunk.slice();
          return acked({ op: "write", chunk: copy }, [copy.buffer as ArrayBuffer]);
        },
        close: () => acked({ op: "close" }),
        abort: () => acked({ op: "close" }).catch(() => {}),
      }),
      stdout: readable("stdout"),
      stderr: readable("stderr"),
      status,
      kill: (signal: Deno.Signal = "SIGTERM") => {
        if (!remote.done) post({ op: "kill", signal });
      },
    };
  }

  #receive(message: { op: string; id: number; [key: string]: unknown }): void {
    const remote = this.#remotes.get(message.id);
    if (remote === undefined) return;
    switch (message.op) {
      case "spawned":
        return remote.started(message.pid as number);
      case "failed": {
        const name = message.name as string;
        const ErrorClass = (Deno.errors as unknown as Record<string, ErrorConstructor>)[name] ?? Error;
        return remote.failed(new ErrorClass(message.message as string));
      }
      case "ack": {
        const seq = message.seq as number;
        remote.acks.get(seq)?.(message.ok as boolean);
        remote.acks.delete(seq);
        return this.#settle(message.id, remote);
      }
      case "data": {
        const stream = message.stream as Stream;
        const chunk = message.chunk as Uint8Array;
        remote.streams[stream]?.enqueue(chunk);
        remote.unacked[stream] += chunk.byteLength;
        if (remote.unacked[stream] >= CREDIT_STEP) {
          this.#worker.postMessage({ op: "credit", id: message.id, stream, bytes: remote.unacked[stream] });
          remote.unacked[stream] = 0;
        }
        return;
      }
      case "end": {
        const stream = message.stream as Stream;
        try {
          remote.streams[stream]?.close();
        } catch {
          // Cancelled by its reader already.
        }
        remote.streams[stream] = undefined;
        return this.#settle(message.id, remote);
      }
      case "status":
        remote.done = true;
        remote.ended({
          success: message.success as boolean,
          code: message.code as number,
          signal: message.signal as Deno.Signal | null,
        });
        return this.#settle(message.id, remote);
    }
  }

  /** Forgets a child once its status came, both of its streams ended and every write to it was answered. */
  #settle(id: number, remote: Remote): void {
    if (
      remote.done && remote.streams.stdout === undefined && remote.streams.stderr === undefined &&
      remote.acks.size === 0
    ) this.#remotes.delete(id);
  }

  /** The worker is gone: every start waiting fails, every child still open ends as killed. */
  #fail(error: Error): void {
    this.#broken ??= error;
    for (const [id, remote] of this.#remotes) {
      remote.failed(error);
      for (const stream of ["stdout", "stderr"] as const) {
        try {
          remote.streams[stream]?.close();
        } catch {
          // Closed already.
        }
        remote.streams[stream] = undefined;
      }
      for (const ack of remote.acks.values()) ack(false);
      if (!remote.done) {
        remote.done = true;
        remote.ended({ success: false, code: 1, signal: "SIGKILL" });
      }
      this.#remotes.delete(id);
    }
  }
}
