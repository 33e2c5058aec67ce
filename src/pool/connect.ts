/**
 * The pool's NATS connection: credentials and TLS from the usual NATS variables (never from a model or a message),
 * and the work-queue stream and its consumer, made by whichever caller or worker comes first.
 *
 * @module
 */
import {
  type Authenticator,
  connect,
  credsAuthenticator,
  type NatsConnection,
  nkeyAuthenticator,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import {
  AckPolicy,
  DiscardPolicy,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { CommandFailure } from "../commands/cli.ts";
import type { PoolAddress } from "./address.ts";
import { POOL } from "./protocol.ts";
import { after } from "../base/timer.ts";

/**
 * The pool cannot be reached or used: the message names the URL (never its secrets) and the cause.
 *
 * @example
 * ```ts
 * import { PoolError } from "./connect.ts";
 * const error = new PoolError("cannot reach the worker pool at nats://127.0.0.1:4222: connection refused");
 * error.message; // printed as one line by the CLI, exit 1
 * ```
 */
export class PoolError extends CommandFailure {
  /** A pool problem, said for a person. */
  constructor(message: string) {
    super(message);
    this.name = "PoolError";
  }
}

const nanos = (ms: number) => ms * 1_000_000;

/** Reads a file a NATS variable names, or says which variable named what. */
async function readNamed(env: Readonly<Record<string, string>>, name: string): Promise<Uint8Array> {
  try {
    return await Deno.readFile(env[name]);
  } catch (error) {
    throw new PoolError(`cannot read ${name} (${env[name]}): ${(error as Error).message}`);
  }
}

/**
 * The connection options of an address and an environment: `NATS_CREDS` (a creds file), `NATS_NKEY` (a seed file),
 * `NATS_USER` and `NATS_PASSWORD`, `NATS_TOKEN`, or the user info of the URL; `NATS_CA`, `NATS_CERT` and `NATS_KEY`
 * for TLS, which a `tls://` URL requires and any of them turns on.
 */
async function connectionOptions(
  address: PoolAddress,
  env: Readonly<Record<string, string>>,
  name: string,
): Promise<NodeConnectionOptions> {
  const authenticator: Authenticator[] = [];
  if (env.NATS_CREDS) authenticator.push(credsAuthenticator(await readNamed(env, "NATS_CREDS")));
  if (env.NATS_NKEY) {
    const seed = new TextDecoder().decode(await readNamed(env, "NATS_NKEY")).trim();
    authenticator.push(nkeyAuthenticator(new TextEncoder().encode(seed)));
  }
  const user = address.user ?? (env.NATS_USER || undefined);
  const pass = address.user !== undefined ? address.pass : env.NATS_PASSWORD || undefined;
  const wantsTls = address.tls || !!(env.NATS_CA || env.NATS_CERT || env.NATS_KEY);
  return {
    servers: [...address.servers],
    name,
    // A user without a password is a token, as in `nats://TOKEN@host`.
    ...(user !== undefined && pass !== undefined ? { user, pass } : {}),
    ...(user !== undefined && pass === undefined ? { token: user } : {}),
    ...(user === undefined && env.NATS_TOKEN ? { token: env.NATS_TOKEN } : {}),
    ...(authenticator.length > 0 ? { authenticator } : {}),
    ...(wantsTls
      ? {
        tls: {
          ...(env.NATS_CA ? { caFile: env.NATS_CA } : {}),
          ...(env.NATS_CERT ? { certFile: env.NATS_CERT } : {}),
          ...(env.NATS_KEY ? { keyFile: env.NATS_KEY } : {}),
        },
      }
      : {}),
    timeout: 5_000,
    // Once connected, a lost server is waited for: calls meanwhile answer `unavailable`.
    reconnect: true,
    maxReconnectAttempts: -1,
  };
}

/**
 * Connects to the pool and makes sure its stream and consumer exist; throws {@linkcode PoolError}, naming the URL.
 *
 * @example Not run as a doc test: it needs a running NATS server (tests/pool/ starts one).
 * ```ts ignore
 * import { connectPool } from "./connect.ts";
 * import { parsePoolUrl } from "./address.ts";
 * const address = parsePoolUrl("nats://127.0.0.1:4222");
 * if (typeof address !== "string") {
 *   const nc = await connectPool(address, Deno.env.toObject(), "toolgate caller");
 *   await nc.drain();
 * }
 * ```
 */
export async function connectPool(
  address: PoolAddress,
  env: Readonly<Record<string, string>>,
  name: string,
): Promise<NatsConnection> {
  const options = await connectionOptions(address, env, name);
  let nc: NatsConnection;
  const deadline = performance.now() + STARTING_SERVER_MS;
  while (true) {
    try {
      nc = await connect(options);
      break;
    } catch (error) {
      // Refused: nothing listens yet. A server started a moment ago (`nats-server ... &`, then a worker or a
      // call) is given a few seconds to listen; any other failure (auth, TLS, a name) is said at once.
      if (!refused(error) || performance.now() > deadline) {
        throw new PoolError(`cannot reach the worker pool at ${address.shown}: ${describe(error)}`);
      }
      await new Promise<void>((resolve) => after(250, resolve));
    }
  }
  try {
    await ensureStream(await jetstreamManager(nc, { timeout: POOL.publishMs }));
  } catch (error) {
    await nc.close();
    throw new PoolError(
      `the NATS server at ${address.shown} has no usable JetStream (start it with -js): ${describe(error)}`,
    );
  }
  return nc;
}

/** How long a connection that is refused is tried again at start: a NATS server that was just started. */
const STARTING_SERVER_MS = 3_000;

/** Whether the connection was refused (no server listens there yet), as the client reports it. */
function refused(error: unknown): boolean {
  return /ECONNREFUSED|connection refused/i.test(describe(error));
}

/** An error's message, with its cause where the client nests the real one. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

/** The work-queue stream and the workers' consumer: made if missing, left as they are otherwise. */
async function ensureStream(jsm: JetStreamManager): Promise<void> {
  await orMake(() => jsm.streams.info(POOL.stream), () =>
    jsm.streams.add({
      name: POOL.stream,
      subjects: [POOL.subject],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(POOL.duplicateWindowMs),
      max_age: nanos(POOL.maxAgeMs),
    }));
  await orMake(() => jsm.consumers.info(POOL.stream, POOL.consumer), () =>
    jsm.consumers.add(POOL.stream, {
      durable_name: POOL.consumer,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(POOL.ackWaitMs),
      max_deliver: -1,
      max_ack_pending: 10_000,
    }));
}

/** Looks a thing up, makes it when missing, and looks again when another process made it meanwhile. */
async function orMake(look: () => Promise<unknown>, make: () => Promise<unknown>): Promise<void> {
  try {
    await look();
    return;
  } catch {
    // Missing (or not readable yet): make it.
  }
  try {
    await make();
  } catch (error) {
    // Another caller or worker may have made it first.
    await look().catch(() => {
      throw error;
    });
  }
}

/**
 * Whether the server a connection reached lets nobody in without credentials: it asks for them (a token, a user,
 * an nkey, a creds file) or for a client certificate. Said by the server itself, not by what this side sent: a
 * server without authentication takes any token and ignores it.
 *
 * @example
 * ```ts ignore
 * import { connectPool, requiresAuthentication } from "./connect.ts";
 * // const nc = await connectPool(address, env, "toolgate worker");
 * // if (!requiresAuthentication(nc)) console.error("anyone who reaches the server can use the pool");
 * ```
 */
export function requiresAuthentication(nc: NatsConnection): boolean {
  return nc.info?.auth_required === true || nc.info?.tls_verify === true;
}
