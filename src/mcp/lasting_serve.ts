/**
 * `Deno.serve` that outlives a failed accept. Deno's server ends its accept loop for good on the first accept
 * that fails (out of file descriptors: EMFILE, ENFILE) and rejects its `finished`, which, unhandled, ends the
 * process: one tool that took every descriptor would end every session of `serve --http`. Here the failure is
 * reported, the connections being served go on, and a new server listens on the same address once descriptors
 * can be had again (clients are refused meanwhile).
 *
 * @module
 */

/** A server that listens again after its accept failed, until it is shut down. */
export interface LastingServer {
  /** The address it listens on (the port chosen at the first listen, kept for every later one). */
  readonly addr: Deno.NetAddr;
  /** Resolves when the server was shut down. */
  readonly finished: Promise<void>;
  /** Stops listening and waits for the requests in flight, on every server this one has been. */
  shutdown(): Promise<void>;
}

/** Where and how to listen, and where failures of the accept loop are told. */
export interface LastingServeOptions {
  readonly hostname: string;
  readonly port: number;
  /** Said for a failed accept and each failed listen again (one line, no stack). */
  readonly onAcceptError?: (message: string) => void;
  /** Turns an error of the handler into a response (as `Deno.serve`'s `onError`). */
  readonly onError?: (error: unknown) => Response | Promise<Response>;
  /** The first wait before listening again, doubled after each failure up to 2 s (default 100 ms). */
  readonly backoffMs?: number;
}

/** The longest wait between two attempts to listen again. */
const MAX_BACKOFF_MS = 2_000;

/**
 * Serves `handler` on `hostname:port` for as long as it is not shut down, whatever its accepts meet.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serveLasting } from "./lasting_serve.ts";
 * const server = serveLasting({ hostname: "127.0.0.1", port: 0 }, () => new Response("ok"));
 * const answer = await fetch(`http://127.0.0.1:${server.addr.port}/`);
 * assert.equal(await answer.text(), "ok");
 * await server.shutdown();
 * ```
 */
export function serveLasting(
  options: LastingServeOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): LastingServer {
  const servers = new Set<Deno.HttpServer<Deno.NetAddr>>();
  const first = listen(options.port);
  const addr = first.addr;
  const { promise: finished, resolve } = Promise.withResolvers<void>();
  const initialBackoff = options.backoffMs ?? 100;
  let backoff = initialBackoff;
  let stopping = false;
  let again: ReturnType<typeof setTimeout> | undefined;

  function listen(port: number): Deno.HttpServer<Deno.NetAddr> {
    return Deno.serve({
      hostname: options.hostname,
      port,
      // Deno's default prints the address on stdout; the caller says where it goes.
      onListen: () => {},
      onError: options.onError,
    }, handler);
  }

  function watch(server: Deno.HttpServer<Deno.NetAddr>): void {
    servers.add(server);
    server.finished.then(
      () => servers.delete(server),
      (error: unknown) => {
        // The failed server's connections are still served: it stays in the set, to be shut down with the rest.
        if (stopping) return;
        options.onAcceptError?.(
          `the server stopped accepting (${error instanceof Error ? error.message : String(error)}); ` +
            `listening again on ${options.hostname}:${addr.port}`,
        );
        schedule();
      },
    );
  }

  function schedule(): void {
    again = setTimeout(() => {
      again = undefined;
      if (stopping) return;
      try {
        watch(listen(addr.port));
        backoff = initialBackoff;
      } catch (error) {
        options.onAcceptError?.(
          `cannot listen on ${options.hostname}:${addr.port} again: ${(error as Error).message}; retrying`,
        );
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        schedule();
      }
    }, backoff);
  }

  watch(first);
  return {
    addr,
    finished,
    shutdown: async () => {
      stopping = true;
      if (again !== undefined) clearTimeout(again);
      await Promise.allSettled([...servers].map((server) => server.shutdown()));
      resolve();
    },
  };
}
