/**
 * An MCP client transport over a child process's stdin and stdout (newline-delimited JSON-RPC, the stdio
 * transport of the MCP specification), for a child toolgate started itself with `Deno.Command`: the SDK's own
 * stdio transport spawns through node's child_process, which cannot start the confined (bwrap) argv toolgate
 * builds and keeps in its process registry.
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/shared/transport"
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { JSONRPCMessage } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";

import { jsonRpcFault } from "../contract/json_rpc.ts";

const encoder = new TextEncoder();

/** The longest line a server may send (a larger one is an error, and the connection ends). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Speaks MCP over a spawned child's piped stdin and stdout; its stderr is kept (the last few KiB) for the reason a
 * server that ends at once gives.
 *
 * @example Not run as a doc test: it needs an MCP server program and a client.
 * ```ts ignore
 * const child = new Deno.Command("node", { args: ["server.js"], stdin: "piped", stdout: "piped", stderr: "piped" }).spawn();
 * await client.connect(new ChildTransport(child));
 * ```
 */
export class ChildTransport implements Transport {
  readonly #child: Deno.ChildProcess;
  #writer?: WritableStreamDefaultWriter<Uint8Array>;
  #closed = false;
  /** The lines sent while the write before them was under way: written together, in order, in one write. */
  #waiting?: { lines: string[]; written: Promise<void> };
  /** The last write begun (settled either way): the next batch starts after it. */
  #lastWrite: Promise<unknown> = Promise.resolve();
  #stderr = "";
  #stderrRead: Promise<void> = Promise.resolve();
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  constructor(child: Deno.ChildProcess) {
    this.#child = child;
  }

  /** The last lines the child wrote on stderr. */
  get stderr(): string {
    return this.#stderr;
  }

  /** Settles once the child's stderr has ended (everything it wrote is in {@linkcode ChildTransport.stderr}). */
  get stderrEnded(): Promise<void> {
    return this.#stderrRead;
  }

  start(): Promise<void> {
    this.#writer = this.#child.stdin.getWriter();
    void this.#read();
    this.#stderrRead = this.#readStderr();
    return Promise.resolve();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of this.#child.stdout) {
        buffer += decoder.decode(chunk, { stream: true });
        if (buffer.length > MAX_LINE_BYTES) throw new Error("the server sent a line over 64 MiB");
        let end: number;
        while ((end = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, end).replace(/\r$/, "");
          buffer = buffer.slice(end + 1);
          if (line.trim() === "") continue;
          let message: unknown;
          try {
            message = JSON.parse(line);
          } catch (error) {
            this.onerror?.(
              new Error(`the server wrote a line that is not JSON-RPC: ${(error as Error).message}`),
            );
            continue;
          }
          const wrong = jsonRpcFault(message);
          if (wrong !== undefined) {
            this.onerror?.(new Error(`the server wrote a line that is not JSON-RPC: ${wrong}`));
            continue;
          }
          this.onmessage?.(message as JSONRPCMessage);
        }
      }
    } catch (error) {
      if (!this.#closed) this.onerror?.(error as Error);
    } finally {
      void this.close();
    }
  }

  async #readStderr(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.#child.stderr) {
        this.#stderr = (this.#stderr + decoder.decode(chunk, { stream: true })).slice(-4096);
      }
    } catch {
      // The child is gone: what it said stays.
    }
  }

  /**
   * Writes one message as a line. The messages sent while an earlier write is under way (concurrent calls under
   * load) wait for it and go together in one write: each write wakes the server, and costs this process a system
   * call. Resolves once its line is written; a failed write rejects every message of its batch.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const writer = this.#writer;
    if (this.#closed || writer === undefined) {
      return Promise.reject(new Error("the server's connection is closed"));
    }
    const line = JSON.stringify(message) + "\n";
    if (this.#waiting !== undefined) {
      this.#waiting.lines.push(line);
      return this.#waiting.written;
    }
    const lines = [line];
    const written = this.#lastWrite.then(() => {
      if (this.#waiting?.lines === lines) this.#waiting = undefined;
      return writer.write(encoder.encode(lines.join("")));
    });
    this.#waiting = { lines, written };
    this.#lastWrite = written.catch(() => {});
    return written;
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    // The child's stdin closes once what was sent is written; that is not waited for (a child that reads nothing
    // more would hold it forever): the connection is closed now, and its pending requests are refused.
    this.#writer?.close().catch(() => {
      // Already broken: the child ended.
    });
    this.onclose?.();
    return Promise.resolve();
  }
}
