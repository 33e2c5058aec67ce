/** The `worker` command's work: a pool worker over this machine's executor (loaded only when it runs). @module */
import {
  EXIT,
  expectPositionals,
  flag,
  type Io,
  numberOption,
  type ParsedArgs,
  SIGNAL_EXIT,
  stopSignals,
  stringOption,
  UsageError,
} from "./cli.ts";
import { parsePoolUrl } from "../pool/address.ts";
import { connectPool, requiresAuthentication } from "../pool/connect.ts";
import { POOL_KEY_HELP } from "../pool/key.ts";
import { manifestHash, shortHash } from "../pool/protocol.ts";
import { PoolWorker } from "../pool/worker.ts";
import { executorFromArgs, executorSettings, poolKeyFromArgs } from "./executor_options.ts";
import { loadForCommand } from "./load.ts";
import type { StartedConsole } from "../console/start.ts";
import { consolePort, openConsole } from "./console_option.ts";
import { stopReason } from "../process/stop.ts";

/** Serves calls from the pool until a stop signal (or a connection closed for good). */
export async function serveWorker(parsed: ParsedArgs, io: Io): Promise<number> {
  expectPositionals(parsed, 0, "worker");
  const url = stringOption(parsed, "nats") ?? (io.env.NATS_URL || undefined);
  if (url === undefined) throw new UsageError("worker needs --nats URL (or NATS_URL)", "worker");
  const address = parsePoolUrl(url);
  if (typeof address === "string") throw new UsageError(`--nats ${address}`, "worker");
  const concurrency = numberOption(parsed, "concurrency", navigator.hardwareConcurrency || 1, "worker", {
    integer: true,
  });
  const name = stringOption(parsed, "name") ?? `${Deno.hostname()}:${Deno.pid}`;
  const settings = await executorSettings(parsed, io, "worker");
  const consoleAt = consolePort(parsed, "worker");
  const insecure = flag(parsed, "insecure");
  // No key, no worker: a call nobody signed must never run, and --insecure does not change that.
  const key = await poolKeyFromArgs(parsed, io, "worker");
  if (key === undefined) {
    throw new UsageError(
      `worker refuses to start without the pool's signing key, which callers sign calls with: ${POOL_KEY_HELP}` +
        " (--insecure does not waive it)",
      "worker",
    );
  }
  const manifest = await loadForCommand(parsed, io, { runsTools: "ask" });
  if (!manifest) return EXIT.failure;
  // Calls end when they end, not with a signal to this process: the worker decides (first stop: let them finish).
  let watching: StartedConsole | undefined;
  const { executor, registry, redact } = await executorFromArgs(parsed, io, manifest, "worker", settings, {
    handleSignals: false,
    jobs: false,
    spawnThread: true,
    onAudit: () => watching?.hub.audited(),
  });
  const hash = await manifestHash(manifest);
  const nc = await connectPool(address, io.env, `toolgate worker ${name}`);
  const log = (line: string) => void io.stderr(`toolgate worker: ${line}\n`);
  if (!requiresAuthentication(nc)) {
    if (!insecure) {
      await nc.close();
      await registry.endAll();
      await executor.close();
      throw new UsageError(
        `worker refuses to start: the NATS server at ${address.shown} lets anyone connect without credentials, ` +
          "who could then read every call and result and flood the queue; give the server a token or users " +
          "and the worker NATS_TOKEN, NATS_USER/NATS_PASSWORD, NATS_CREDS or NATS_NKEY, or start it with --insecure",
        "worker",
      );
    }
    log(
      `warning: --insecure: the NATS server at ${address.shown} lets anyone connect without credentials; ` +
        "calls still run only when signed with the pool key, but anyone who reaches the server can read them " +
        "and their results",
    );
  }
  if (consoleAt !== undefined) {
    watching = await openConsole(io, { port: consoleAt, parsed, settings, executor, redact });
    if (watching === undefined) {
      await nc.close();
      await registry.endAll();
      await executor.close();
      return EXIT.failure;
    }
  }
  const worker = new PoolWorker({
    nc,
    executor,
    manifest: hash,
    key: key.key,
    name,
    concurrency,
    log,
    watch: watching?.hub,
  });
  const signals = stopSignals();
  try {
    await worker.start();
    await io.stderr(
      `toolgate worker ${name}: serving the ${manifest.tools.length} tools of ${manifest.path} (manifest ` +
        `${shortHash(hash)}) from ${address.shown}, ${concurrency} at a time\n`,
    );
    const first = await Promise.race([signals.next(), nc.closed().then(() => undefined)]);
    if (first === undefined) {
      log("the connection to the pool closed");
      return EXIT.failure;
    }
    if (worker.running > 0) log(`finishing ${worker.running} call(s); signal again to stop them`);
    const stopped = worker.stop();
    // A second stop: the calls end now (killed_by "user" for SIGINT, "shutdown" for the others), each audited.
    const again = signals.next().then((signal) => worker.cancelAll(stopReason(signal)));
    await stopped;
    void again;
    return SIGNAL_EXIT[first];
  } finally {
    await watching?.serving.close();
    signals.dispose();
    await nc.drain().catch(() => nc.close());
    await registry.endAll();
    await executor.close();
  }
}
