/**
 * Publishers on the worker pool's subject, crafting calls by hand instead of through a caller's toolgate. One
 * without the pool key (any process that reaches the NATS server) gets nothing run and learns nothing of the
 * worker's manifest: an unsigned, forged, replayed or stale call is refused, and a go it forges runs nothing. One
 * with the key is a caller: the worker checks its every call again (its own preflight, its own manifest), and
 * nothing a message adds (an environment, a sandbox mode, a command) changes how a tool runs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { isRecord } from "../../src/contract.ts";
import { connectPool } from "../../src/pool/connect.ts";
import {
  encode,
  manifestHash,
  POOL,
  PROTOCOL_VERSION,
  readReply,
  type ReplyMessage,
} from "../../src/pool/protocol.ts";
import { importPoolKey, type PoolSigningKey, signed } from "../../src/pool/signing.ts";
import { alivePids, baseEnv, BIN, manifestOf, scratch } from "../executor_helpers.ts";
import { denoDir, launcherArgs, runToolgate } from "../support.ts";
import { NO_BWRAP } from "./helpers.ts";
import {
  natsServer,
  POOL_ENV,
  POOL_KEY,
  POOL_KEY_FILE,
  POOL_TOOLS,
  poolFor,
  poolTest,
  runsIn,
  startWorker,
  type WorkerStart,
  writePoolManifest,
} from "../pool/helpers.ts";

const TOOLS = [
  ...POOL_TOOLS,
  { name: "env_dump", readOnly: true, command: [join(BIN, "env_dump")] },
  // A call with side effects, quick: each run appends a line to `runs` in the worker's folder.
  { name: "mark", command: [join(BIN, "mark_nap"), "0"] },
  // Read-only calls (as their manifest says) that show each run the same way: one quick, one of 30 s.
  { name: "peek", readOnly: true, command: [join(BIN, "mark_nap"), "0"] },
  { name: "peek_long", readOnly: true, command: [join(BIN, "mark_nap"), "30"] },
];
const HASH = await manifestHash(manifestOf(TOOLS));

/** A key that is not the pool's: what an attacker signs with. */
const FORGED_KEY = await importPoolKey("an-attacker-key-0123456789abcdefghijklmnop", "the attacker's key");

/**
 * How a crafted call is made: its fields over well-formed defaults, what signs it (nothing: unsigned), and keys
 * added to the message after it was signed.
 */
interface Crafted {
  readonly fields: Record<string, unknown>;
  readonly key?: PoolSigningKey;
  readonly extra?: Record<string, unknown>;
}

/** A call's bytes: `fields` over well-formed defaults (this manifest's hash, limits, now), signed with `key`. */
async function callBytes(
  reply: string,
  { fields, key, extra }: Crafted,
): Promise<{ id: string; data: Uint8Array }> {
  const id = crypto.randomUUID();
  const call = {
    v: PROTOCOL_VERSION,
    id,
    manifest: HASH,
    reply,
    defaults: { timeoutSec: 10, graceMs: 500, maxOutputBytes: 65536 },
    ts: Date.now(),
    wait: 30_000,
    ...fields,
  };
  return { id, data: encode({ ...(key === undefined ? call : await signed(key, "call", call)), ...extra }) };
}

/** Publishes bytes on the pool's subject as a new stream message (a new message id: the stream keeps it). */
async function publish(nc: NatsConnection, data: Uint8Array): Promise<void> {
  await jetstream(nc).publish(POOL.subject, data, { msgID: crypto.randomUUID() });
}

/** How a crafted caller answers a worker's claim: with these bytes (or not at all). */
type Answer = (claim: ReplyMessage & { t: "claim" }) => Promise<Uint8Array | undefined>;

/** A go signed with `key` for `claim`: a caller's own, when `key` is the pool's. */
const signedGo = (key: PoolSigningKey, nonce?: string): Answer => async (claim) =>
  encode(
    await signed(key, "go", { go: "yes", id: claim.id, worker: claim.worker, nonce: nonce ?? claim.nonce }),
  );

/** A go as the attack of issue 24 sent it: unsigned. */
const bareGo: Answer = () => Promise.resolve(encode({ go: "yes" }));

/** A crafted caller's inbox: answers claims with `answer`, confirms results, and keeps every raw message. */
class Inbox {
  readonly subject = createInbox();
  readonly raw: string[] = [];
  readonly #first = Promise.withResolvers<void>();
  readonly #result = Promise.withResolvers<Record<string, unknown>>();

  constructor(nc: NatsConnection, answer: Answer) {
    nc.subscribe(this.subject, {
      callback: (_error, msg) => void this.#receive(msg, answer),
    });
  }

  async #receive(msg: Msg, answer: Answer): Promise<void> {
    this.raw.push(new TextDecoder().decode(msg.data));
    this.#first.resolve();
    const message = readReply(msg.data);
    if (message?.t === "claim") {
      const bytes = await answer(message);
      if (bytes !== undefined) msg.respond(bytes);
    } else if (message?.t === "result") {
      msg.respond(encode({}));
      this.#result.resolve(isRecord(message.envelope) ? message.envelope : {});
    } else if (msg.reply) {
      msg.respond(encode({}));
    }
  }

  /** The first message the worker sent here, parsed (within 15 s). */
  async first(): Promise<Record<string, unknown>> {
    await within(this.#first.promise, "a message from the worker");
    return JSON.parse(this.raw[0]);
  }

  /** The call's envelope (within 15 s). */
  result(): Promise<Record<string, unknown>> {
    return within(this.#result.promise, "the call's result");
  }
}

async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within 15 s`)), 15_000);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Publishes a call crafted by a holder of the pool key (`extra` added to the signed message), answering its claim
 * with a go signed with that key; returns its envelope.
 */
async function craftedCall(
  nc: NatsConnection,
  fields: Record<string, unknown>,
  extra?: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const inbox = new Inbox(nc, signedGo(POOL_KEY));
  await publish(nc, (await callBytes(inbox.subject, { fields, key: POOL_KEY, extra })).data);
  return await inbox.result();
}

/**
 * The scene of an attack: a nats-server, a scratch folder with TOOLS' manifest, its worker `a` (one slot, started
 * as `start` says), and the attacker's own connection to the server.
 */
async function attackScene(start: WorkerStart = {}) {
  const stack = new AsyncDisposableStack();
  try {
    const server = stack.use(await natsServer());
    const dir = stack.use(await scratch());
    const path = await writePoolManifest(dir.path, TOOLS);
    const worker = stack.use(await startWorker(server.url, path, dir.path, "a", start));
    const nc = await connectPool(server.address, baseEnv(), "attacker");
    stack.defer(() => nc.close());
    const moved = stack.move();
    return { server, dir: dir.path, worker, nc, [Symbol.asyncDispose]: () => moved.disposeAsync() };
  } catch (error) {
    await stack.disposeAsync();
    throw error;
  }
}

poolTest(
  "pool attack: a crafted call is checked again on the worker; what it adds changes nothing; a reply subject that is no inbox gets nothing sent there",
  async () => {
    await using scene = await attackScene();
    const { nc } = scene;
    // Arguments a caller's preflight would refuse are refused by the worker's own.
    const bad = await craftedCall(nc, { tool: "echo", args: '{"n":"many","extra":true}' });
    assert.equal(bad.ok, false);
    assert.equal(bad.kind, "invalid_args");
    // A tool the manifest does not have does not run, whatever command the message names.
    const unknown = await craftedCall(nc, { tool: "sh", args: "{}" }, {
      command: ["/bin/sh", "-c", "touch pwned"],
    });
    assert.equal(unknown.kind, "tool_not_found");
    // Extra keys (an environment, a sandbox mode, a command) added to a signed call are dropped before anything
    // runs (the signature covers the fields a worker reads, so they neither break it nor count).
    const env = await craftedCall(nc, { tool: "env_dump", args: "{}" }, {
      env: { INJECTED: "1", LD_PRELOAD: "/tmp/evil.so" },
      sandbox: "off",
      command: ["/bin/sh", "-c", "touch pwned"],
    });
    assert.equal(env.ok, true, JSON.stringify(env));
    const seen = env.result as Record<string, string>;
    assert.equal(seen.INJECTED, undefined);
    assert.equal(seen.LD_PRELOAD, undefined);
    assert.deepEqual(
      Object.keys(seen).filter((name) => !["PATH", "HOME", "PWD", "SHLVL", "_"].includes(name)),
      [],
    );
    await assert.rejects(Deno.stat(join(scene.dir, "pwned")), Deno.errors.NotFound);
    // Were the reply subject taken as given, the worker would publish there with its own rights (a claim sent to
    // $JS.API.STREAM.PURGE.<stream> empties the work queue): here a subject the attacker listens on stands in.
    const sink: unknown[] = [];
    const listening = nc.subscribe("attacker.sink", {
      callback: (_error, msg) => void sink.push(msg.data),
    });
    await publish(
      nc,
      (await callBytes("attacker.sink", { fields: { tool: "echo", args: "{}" }, key: POOL_KEY })).data,
    );
    // A well-formed call after it is answered: the worker has taken (and dropped) the crafted one by then.
    const after = await craftedCall(nc, { tool: "echo", args: "{}" });
    assert.equal(after.ok, true, JSON.stringify(after));
    await nc.flush();
    listening.unsubscribe();
    assert.deepEqual(sink, [], "the worker sent nothing to a subject that is not an inbox");
  },
);

poolTest(
  "pool attack: unsigned, forged, replayed and stale calls and a forged go run nothing, and no reply names the manifest's hash",
  async () => {
    await using scene = await attackScene();
    const { nc, worker } = scene;
    const inboxes: Inbox[] = [];
    /** Publishes a crafted `mark` call, its claim answered with `answer`; returns its inbox and bytes. */
    const attack = async (crafted: Crafted, answer: Answer) => {
      const inbox = new Inbox(nc, answer);
      inboxes.push(inbox);
      const bytes = await callBytes(inbox.subject, {
        ...crafted,
        fields: { tool: "mark", args: "{}", ...crafted.fields },
      });
      await publish(nc, bytes.data);
      return { inbox, ...bytes };
    };
    const refusedFor = async (inbox: Inbox, reason: string) => {
      const first = await inbox.first();
      assert.deepEqual(first, { t: "refused", id: first.id, worker: "a", reason }, inbox.raw.join("\n"));
    };
    // The attack of issue 24, item 6: an unsigned call and an unsigned go (today: exec ran as root).
    const unsigned = await attack({ fields: {} }, bareGo);
    await refusedFor(unsigned.inbox, "unsigned");
    // Signed with a key that is not the pool's (its go too).
    const forged = await attack({ fields: {}, key: FORGED_KEY }, signedGo(FORGED_KEY));
    await refusedFor(forged.inbox, "signature");
    // A call made for another manifest, unsigned: refused, never told which manifest runs here.
    const probe = await attack({ fields: { manifest: `sha256:${"0".repeat(64)}` } }, bareGo);
    await refusedFor(probe.inbox, "unsigned");
    // Correctly signed, ten minutes old (a call recorded then): stale, even to a caller that says yes.
    const stale = await attack({ fields: { ts: Date.now() - 600_000 }, key: POOL_KEY }, signedGo(POOL_KEY));
    await refusedFor(stale.inbox, "stale");
    // A signed call whose go is forged: unsigned, signed with another key, or a real go for another claim.
    for (const answer of [bareGo, signedGo(FORGED_KEY), signedGo(POOL_KEY, crypto.randomUUID())]) {
      const goForged = await attack({ fields: {}, key: POOL_KEY }, answer);
      assert.equal((await goForged.inbox.first()).t, "claim");
    }
    // A valid call, answered by a caller that says yes to every claim, runs once; the exact bytes published
    // again (as a new stream message) are a replay, refused although that caller would say yes again.
    const valid = await attack({ fields: {}, key: POOL_KEY }, signedGo(POOL_KEY));
    assert.deepEqual(await valid.inbox.result(), { ok: true, result: { slept: 0 }, tool: "mark" });
    assert.equal((await runsIn(scene.dir)).length, 1);
    await publish(nc, valid.data);
    // A key holder's call for another manifest hears "not here", and not which manifest is.
    const other = await attack({ fields: { manifest: `sha256:${"0".repeat(64)}` }, key: POOL_KEY }, bareGo);
    assert.equal((await other.inbox.first()).t, "mismatch");
    // A caller's own call runs: the worker took and answered every message above before this one.
    await using pool = await poolFor(scene.server, manifestOf(TOOLS));
    const answer = await pool.run({
      tool: "mark",
      readOnly: false,
      argsText: "{}",
      startWithinMs: 15_000,
      defaults: { timeoutSec: 10, graceMs: 500, maxOutputBytes: 65536 },
    });
    assert.deepEqual(answer.envelope, { ok: true, result: { slept: 0 }, tool: "mark" });
    // Two runs: the valid call and the caller's. Nothing else ran.
    assert.equal((await runsIn(scene.dir)).length, 2);
    // The replay was refused as one, to the valid call's own inbox.
    await within(
      (async () => {
        while (!valid.inbox.raw.some((text) => text.includes('"reason":"replayed"'))) {
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })(),
      "the replay's refusal",
    );
    assert.match(
      worker.stderr(),
      new RegExp(`refused call ${valid.id} \\(mark\\): a call with its id was taken`),
    );
    // Nothing the worker sent to any of these inboxes names its manifest's hash, whole or short.
    const hex = HASH.slice("sha256:".length);
    for (const inbox of inboxes) {
      for (const text of inbox.raw) {
        assert.ok(!text.includes(hex.slice(0, 12)), `a reply names the manifest's hash: ${text}`);
      }
    }
  },
);

poolTest(
  "pool: a read-only call starts while its go travels; a forged go stops it at once (its tree ended, no answer, the slot free)",
  async () => {
    // One slot: a call left running would hold every call after it.
    await using scene = await attackScene();
    const { nc } = scene;
    /** Publishes a signed read-only call, its claim answered with `answer`; returns its inbox. */
    const call = async (tool: string, answer: Answer) => {
      const inbox = new Inbox(nc, answer);
      await publish(
        nc,
        (await callBytes(inbox.subject, { fields: { tool, args: "{}" }, key: POOL_KEY })).data,
      );
      return inbox;
    };
    /** A go signed by the pool's key, sent only once the tool has left its mark: it ran before its go came. */
    const goOnceRan = (runs: number): Answer => async (claim) => {
      await within(
        (async () => {
          while ((await runsIn(scene.dir)).length < runs) {
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        })(),
        "run of the read-only tool before its go",
      );
      return await signedGo(POOL_KEY)(claim);
    };
    const first = await call("peek", goOnceRan(1));
    assert.deepEqual(await first.result(), { ok: true, result: { slept: 0 }, tool: "peek" });
    // Signed, but its go forged: it may have started; it is stopped, and nothing is sent but the claim.
    const forged = await call("peek_long", bareGo);
    assert.equal((await forged.first()).t, "claim");
    // The one slot takes the next call well within the 30 s the stopped one would have slept.
    const started = performance.now();
    const next = await call("peek", signedGo(POOL_KEY));
    assert.deepEqual(await next.result(), { ok: true, result: { slept: 0 }, tool: "peek" });
    assert.ok(performance.now() - started < 10_000, "the forged call held the worker's slot");
    assert.deepEqual(forged.raw.map((text) => JSON.parse(text).t), ["claim"], forged.raw.join("\n"));
    const runs = await runsIn(scene.dir);
    assert.ok(runs.length === 2 || runs.length === 3, JSON.stringify(runs));
    assert.deepEqual(await alivePids(runs.flat()), [], "a process of a stopped read-only call lives on");
  },
);

/** The pids of the live processes whose command line holds every one of `needles` (`ps`): a call's start. */
async function processesNaming(...needles: string[]): Promise<number[]> {
  const output = await new Deno.Command("ps", { args: ["-eo", "pid=,stat=,args="], stdout: "piped" })
    .output();
  return new TextDecoder().decode(output.stdout).split("\n").flatMap((line) => {
    const [pid, stat, ...args] = line.trim().split(/\s+/);
    const live = stat !== undefined && !stat.startsWith("Z") && !stat.startsWith("X");
    return live && needles.every((needle) => args.join(" ").includes(needle)) ? [Number(pid)] : [];
  });
}

poolTest(
  "pool: a call with side effects has its sandbox started while its go travels, and its tool runs only after a signed go: a forged go runs nothing",
  async () => {
    // Confined: the call's start waits at its gate (src/sandbox/gate.ts) until the worker has the go.
    await using scene = await attackScene({ args: ["--sandbox", "require"] });
    const { nc } = scene;
    const mark = join(BIN, "mark_nap");
    /** Publishes a signed call of `mark` (side effects), its claim answered with `answer`; returns its inbox. */
    const call = async (answer: Answer) => {
      const inbox = new Inbox(nc, answer);
      await publish(
        nc,
        (await callBytes(inbox.subject, { fields: { tool: "mark", args: "{}" }, key: POOL_KEY })).data,
      );
      return inbox;
    };
    /**
     * `answer`, given only once the call's start is there (a process naming the tool and this workspace) and the
     * tool has run no more than its `runs` before: the sandbox was started before its go, and held.
     */
    const onceHeld = (answer: Answer, runs: number): Answer => async (claim) => {
      await within(
        (async () => {
          while ((await processesNaming(mark, scene.dir)).length === 0) {
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        })(),
        "start of the call's sandbox before its go",
      );
      assert.equal((await runsIn(scene.dir)).length, runs, "the tool ran before its go");
      return await answer(claim);
    };
    const first = await call(onceHeld(signedGo(POOL_KEY), 0));
    assert.deepEqual(await first.result(), { ok: true, result: { slept: 0 }, tool: "mark" });
    assert.equal((await runsIn(scene.dir)).length, 1);
    // Signed, but its go forged once its sandbox waits: the start ends, the tool never runs, the slot is free.
    const forged = await call(onceHeld(bareGo, 1));
    assert.equal((await forged.first()).t, "claim");
    const next = await call(signedGo(POOL_KEY));
    assert.deepEqual(await next.result(), { ok: true, result: { slept: 0 }, tool: "mark" });
    assert.equal((await runsIn(scene.dir)).length, 2, "the call whose go was forged ran");
    assert.deepEqual(forged.raw.map((text) => JSON.parse(text).t), ["claim"], forged.raw.join("\n"));
    assert.deepEqual(await processesNaming(mark, scene.dir), [], "a start of a call without its go lives on");
  },
  { facility: "bwrap", missing: NO_BWRAP },
);

/**
 * `toolgate worker ARGS` as a user starts it (the launcher): its exit code and stderr, or `"serving"` (then it is
 * stopped) when it is still running after 20 s, as a worker that does not refuse would be.
 */
async function workerOutcome(
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | "serving"; stderr: string }> {
  const inherited = Deno.env.toObject();
  delete inherited.INIT_CWD;
  const child = new Deno.Command(Deno.execPath(), {
    args: launcherArgs(args),
    cwd,
    // Its own HOME, but this user's Deno cache: an empty one would download the NATS client first.
    env: { ...inherited, NO_COLOR: "1", DENO_DIR: denoDir(), ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const serving = new Promise<"serving">((resolve) => {
    timer = setTimeout(() => resolve("serving"), 20_000);
  });
  const code = await Promise.race([child.status.then((status) => status.code), serving]);
  clearTimeout(timer);
  if (code === "serving") child.kill("SIGTERM");
  await child.status;
  return { code, stderr: await stderr };
}

poolTest(
  "pool: a worker refuses to start without the pool key, or on a server that takes anyone unless --insecure",
  async () => {
    await using server = await natsServer();
    await using dir = await scratch();
    await using home = await scratch();
    const path = await writePoolManifest(dir.path, TOOLS);
    // A HOME of its own: no secret store holds a pool key there.
    const env = {
      HOME: home.path,
      XDG_CONFIG_HOME: join(home.path, "c"),
      XDG_STATE_HOME: join(home.path, "s"),
    };
    const worker = (args: string[], extra: Record<string, string> = {}) =>
      workerOutcome(
        ["worker", "--nats", server.url, "--tools", path, "--allow-absolute-commands", "--no-audit", ...args],
        dir.path,
        { ...env, ...extra },
      );
    for (const args of [[], ["--insecure"]]) {
      const noKey = await worker(args);
      assert.equal(noKey.code, 2, noKey.stderr);
      assert.match(
        noKey.stderr,
        /^toolgate: worker refuses to start without the pool's signing key, which callers sign calls with: .*toolgate secrets set TOOLGATE_POOL_KEY.*--pool-key-file PATH/,
      );
      assert.equal(noKey.stderr.split("\n")[0].includes("--insecure does not waive it"), true);
    }
    const open = await worker([], POOL_ENV);
    assert.equal(open.code, 2, open.stderr);
    assert.match(
      open.stderr,
      /^toolgate: worker refuses to start: the NATS server at nats:\/\/127\.0\.0\.1:\d+ lets anyone connect without credentials.*--insecure$/m,
    );
    // A key file others may read is no key.
    const loose = join(dir.path, "loose.key");
    await Deno.writeTextFile(loose, await Deno.readTextFile(POOL_KEY_FILE), { mode: 0o644 });
    await Deno.chmod(loose, 0o644);
    const looseRun = await worker(["--pool-key-file", loose, "--insecure"]);
    assert.equal(looseRun.code, 2, looseRun.stderr);
    assert.match(looseRun.stderr, /the pool key file .*loose\.key has mode 0644, open to others/);
    // With --insecure and the key, it starts, and says what is open.
    await using started = await startWorker(server.url, path, dir.path, "w", { launcher: true, env });
    assert.match(
      started.stderr(),
      /warning: --insecure: the NATS server at .* lets anyone connect without credentials/,
    );
    // A caller without the key is told at once, before anything is published.
    const caller = await runToolgate(
      [
        "call",
        "echo",
        "{}",
        "--tools",
        path,
        "--allow-absolute-commands",
        "--no-audit",
        "--executor",
        server.url,
      ],
      dir.path,
      env,
    );
    assert.equal(caller.code, 2, caller.stderr);
    assert.match(
      caller.stderr,
      /^toolgate: --executor nats:\/\/127\.0\.0\.1:\d+ needs the pool's signing key/,
    );
    assert.equal(caller.stdout, "");
  },
);
