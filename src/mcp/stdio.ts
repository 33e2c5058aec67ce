/**
 * The MCP server over stdio: protocol messages on stdout and nothing else, requests on stdin. The end of stdin is
 * how a host says stop; it is reported, and the caller stops the service and closes the connection.
 *
 * @module
 */
import process from "node:process";
import type { Readable, Writable } from "node:stream";
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/stdio"
import { StdioServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/stdio.js";
import type { ToolService } from "./server.ts";
import { answerStatelessOn } from "./stateless_stdio.ts";

/** A running stdio server. */
export interface StdioServing {
  /** Resolves when stdin has ended, stdout has broken, or the connection has closed. */
  readonly ended: Promise<void>;
  /** Closes the connection; calls still in flight are aborted unanswered. */
  close(): Promise<void>;
}

/** The streams to serve on (default: this process's stdin and stdout). */
export interface StdioOptions {
  readonly stdin?: Readable;
  readonly stdout?: Writable;
}

/**
 * Serves `service` on stdin and stdout.
 *
 * @example Not run as a doc test: it serves on this process's stdin and stdout.
 * ```ts ignore
 * import { serveStdio } from "./stdio.ts";
 * const serving = await serveStdio(service);
 * await serving.ended;
 * await service.stop(); // answer the calls in flight
 * await serving.close();
 * ```
 */
export async function serveStdio(service: ToolService, options: StdioOptions = {}): Promise<StdioServing> {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const { promise: ended, resolve: end } = Promise.withResolvers<void>();
  const onEnd = () => end();
  // Its close (the host went away, or the server stops) ends the session's background jobs.
  const server = service.server(onEnd);
  const transport = new StdioServerTransport(stdin, stdout);
  // The SDK's transport does not watch for the end of its input; a host closes stdin to stop its server.
  stdin.once("end", onEnd);
  stdin.once("close", onEnd);
  // A host that went away leaves a broken pipe: nothing can be answered any more.
  stdout.once("error", onEnd);
  let closing: Promise<void> | undefined;
  let endStateless = () => Promise.resolve();
  const close = () =>
    closing ??= (async () => {
      stdin.off("end", onEnd);
      stdin.off("close", onEnd);
      await endStateless();
      await server.close();
      // A paused stdin still holds a read open, which would keep the process alive after a stop by signal.
      stdin.destroy();
      end();
    })();
  await server.connect(transport);
  // A client of the 2026-07-28 revision is answered without a session, on the same connection.
  endStateless = answerStatelessOn(transport, service);
  return { ended, close };
}
