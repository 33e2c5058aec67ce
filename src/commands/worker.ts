/** The `worker` command: runs calls taken from a worker pool on NATS JetStream. @module */
import type { Command } from "./cli.ts";
import { EXECUTOR_OPTIONS } from "./executor_options.ts";

/** The executor options a worker takes: where and how it runs tools. The limits travel with each call. */
const WORKER_EXECUTOR_OPTIONS = Object.fromEntries(
  ["cwd", "audit-dir", "no-audit", "sandbox", "pool-key-file"].map((name) => [name, EXECUTOR_OPTIONS[name]]),
);

/** `toolgate worker --nats URL` */
export const workerCommand: Command = {
  name: "worker",
  summary: "run calls from a worker pool on NATS JetStream (callers use --executor URL)",
  usage: "toolgate worker --nats URL [--tools PATH] [--concurrency N] [options]",
  options: {
    nats: {
      type: "string",
      value: "URL",
      help: "the pool's NATS server: nats://HOST:PORT or tls://HOST:PORT (default env NATS_URL)",
    },
    concurrency: {
      type: "string",
      value: "N",
      help: "most calls run at once (default: the number of CPUs)",
    },
    name: {
      type: "string",
      value: "NAME",
      help: "the worker's name in callers' messages and audit lines (default HOST:PID)",
    },
    insecure: {
      type: "boolean",
      help:
        "start although the NATS server takes connections without credentials (calls must still be signed with the pool key)",
    },
    ...WORKER_EXECUTOR_OPTIONS,
    console: {
      type: "string",
      value: "[PORT]",
      help:
        "serve a web console on 127.0.0.1:PORT (none or 0: a free one; docs/console.md): the calls run here, live, and the audit",
    },
  },
  details: [
    "Takes calls from the pool's work queue and runs each exactly as `toolgate call` would here: the same",
    "preflight, sandbox, limits (the caller's --tool-timeout, --kill-grace and --max-output-bytes travel with",
    "the call), audit log and envelope, which goes back to the caller. Workers may start and stop at any time;",
    "any number share the queue. A call made for another manifest than this worker's is not run (the caller",
    "is told). A read-only tool's call whose worker dies is run again by another worker; any other call runs at",
    "most once. Credentials and TLS come from NATS_CREDS, NATS_NKEY, NATS_USER/NATS_PASSWORD, NATS_TOKEN,",
    "NATS_CA, NATS_CERT and NATS_KEY; a server that lets anyone in is refused unless --insecure is given.",
    "Only calls signed with the pool key run (the secret TOOLGATE_POOL_KEY, or --pool-key-file /",
    "TOOLGATE_POOL_KEY_FILE; callers need the same key): an unsigned, mis-signed, replayed or stale call is",
    "refused, and the answer says nothing of this worker's manifest.",
    "SIGINT, SIGTERM or SIGHUP: take no more calls and finish those running; a second one stops them too",
    '(killed_by: "user" for SIGINT, "shutdown" for the others). Each call has its audit line either way.',
    "Example: toolgate worker --nats nats://queue.internal:4222 --tools ./tools.json --concurrency 4",
  ].join("\n"),
  async run(parsed, io) {
    // The implementation (and the NATS client) loads only when this command runs.
    return await (await import("./serve_worker.ts")).serveWorker(parsed, io);
  },
};
