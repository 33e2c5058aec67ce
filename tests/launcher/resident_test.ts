// The resident toolgate (src/commands/resident_server.ts, its client src/resident.ts, the front end in
// src/build/install.ts): a warm run with no terminal leaves a server that answers the next same command. Each test
// tells who ran a tool from the tool itself: its parent's command line says `__resident` when the server ran it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildBundle, shimText } from "../../src/build/install.ts";
import { FRESH_MS } from "../../src/launcher/launch_record.ts";
import { RESIDENT_MODE } from "../../src/launcher/resident_wire.ts";
import { auditDirFor } from "../../src/state/state.ts";
import { answer, callTools, startChatServer } from "../agent/chat_server.ts";
import { writeFiles } from "../support.ts";
import { heldAtGate, pgrep, sleep, until } from "../processes.ts";
import { confinedTest } from "../security/helpers.ts";

interface Installed {
  readonly root: string;
  readonly bin: string;
}

let installed: Promise<Installed> | undefined;

/** One bundle and front end for the whole file. */
function install(): Promise<Installed> {
  installed ??= (async () => {
    const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_resident_" }));
    const bundle = join(root, "bundle");
    const built = await buildBundle(bundle);
    assert.ok(built.ok, built.ok ? "" : built.reason);
    const bin = join(root, "toolgate");
    await Deno.writeTextFile(bin, shimText(Deno.execPath(), { bundle }, Deno.version.deno, "build-1"), {
      mode: 0o755,
    });
    return { root, bin };
  })();
  return installed;
}

/** A home and a trusted project whose tools say who started them, and note each run in a log. */
async function world(t: Installed, name: string) {
  const home = join(t.root, name, "home");
  const project = join(t.root, name, "project");
  const runs = join(t.root, name, "runs.log");
  await Deno.mkdir(join(project, ".git"), { recursive: true });
  await Deno.mkdir(home, { recursive: true });
  // The tool notes its run and its parent's command line: unconfined, its parent is toolgate's main process.
  const who = `printf '%s\\n' "$(tr '\\0' ' ' < /proc/$PPID/cmdline)" >> '${runs}'`;
  await writeFiles(project, {
    "tools.json": {
      tools: [
        {
          name: "greet",
          description: "says GREETING",
          command: ["./tools/bin/greet"],
          readOnly: true,
          envPassthrough: ["GREETING"],
        },
        { name: "nap", description: "sleeps a second", command: ["./tools/bin/nap"], readOnly: true },
        { name: "fail", description: "fails", command: ["./tools/bin/fail"], readOnly: true },
        { name: "doze", description: "sleeps long", command: ["./tools/bin/doze"], readOnly: true },
        // Confined: notes each start in the project, then echoes its arguments.
        {
          name: "note",
          description: "notes its start",
          command: ["./tools/bin/note"],
          permissions: "workspace",
        },
      ],
    },
    "tools/bin/greet": `#!/bin/sh\n${who}\nprintf '{"greeting":"%s"}\\n' "$GREETING"\n`,
    "tools/bin/nap": `#!/bin/sh\n${who}\nsleep 1\necho '{}'\n`,
    "tools/bin/fail": `#!/bin/sh\n${who}\necho 'no luck' >&2\nexit 3\n`,
    // It sleeps once `runs.long` is there (the warm-up's runs answer at once); its pid is in place before its note.
    "tools/bin/doze": `#!/bin/sh\n[ -e '${runs}.long' ] || { echo '{}'; exit 0; }\n` +
      `echo $$ > '${runs}.pid.new' && mv '${runs}.pid.new' '${runs}.pid'\n${who}\nexec sleep 60\n`,
    "tools/bin/note": '#!/bin/sh\necho started >> starts.log\nprintf \'{"args":%s}\\n\' "$(cat)"\n',
  });
  const env: Record<string, string> = {
    HOME: home,
    PATH: "/usr/local/bin:/usr/bin:/bin",
    NO_COLOR: "1",
    GREETING: "hi",
  };
  const dir = Deno.env.get("DENO_DIR");
  if (dir !== undefined) env.DENO_DIR = dir;
  const launch = join(home, ".local", "state", "toolgate", "launch");
  return { home, project, env, runs, launch };
}

type World = Awaited<ReturnType<typeof world>>;

/** Runs the installed command with pipes for its stdio (no terminal); `resident` says the server ran the tool. */
async function run(t: Installed, w: World, args: readonly string[], env: Record<string, string> = w.env) {
  const before = await lines(w.runs);
  const output = await new Deno.Command(t.bin, {
    args: [...args],
    cwd: w.project,
    env,
    clearEnv: true,
    stdin: "null",
  })
    .output();
  const after = await lines(w.runs);
  const decoder = new TextDecoder();
  const news = after.slice(before.length);
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
    ran: news.length,
    resident: news.length > 0 && news.every((line) => line.includes(` ${RESIDENT_MODE} `)),
  };
}

async function lines(path: string): Promise<string[]> {
  try {
    return (await Deno.readTextFile(path)).split("\n").filter((line) => line !== "");
  } catch {
    return [];
  }
}

/** The sockets of the launch folder, once one is there (a warm run starts its server in the background). */
async function sockets(w: World, wait = true): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found: string[] = [];
    try {
      for await (const entry of Deno.readDir(w.launch)) {
        if (entry.name.endsWith(".sock")) found.push(entry.name);
      }
    } catch {
      // No folder yet.
    }
    if (found.length > 0 || !wait || Date.now() > deadline) return found.map((name) => join(w.launch, name));
    await sleep(100);
  }
}

/** The processes whose command line holds `words` in a row. */
function processes(...words: string[]): Promise<number[]> {
  return pgrep(words.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(" "), false);
}

/** The resident servers of a socket. */
function servers(socket: string): Promise<number[]> {
  return processes(RESIDENT_MODE, socket);
}

async function alive(pid: number): Promise<boolean> {
  return (await new Deno.Command("kill", { args: ["-0", String(pid)], stderr: "null" }).output()).success;
}

/** Cold, then warm (which leaves the server), then its socket. */
async function warmUp(t: Installed, w: World, args: readonly string[]): Promise<string> {
  assert.equal((await run(t, w, ["trust"])).code, 0);
  await sleep(FRESH_MS + 100);
  for (const _ of [1, 2]) {
    const result = await run(t, w, args);
    assert.ok(!result.resident, "cold, then warm: the main process runs the tool");
  }
  const [socket] = await sockets(w);
  assert.ok(socket, "the warm run left a server's socket");
  return socket;
}

/** Ends a world's servers, and waits until they are gone. */
async function stop(socket: string): Promise<void> {
  for (const pid of await servers(socket)) Deno.kill(pid, "SIGKILL");
  await until(async () => (await servers(socket)).length === 0, "the servers gone");
}

Deno.test("resident: the next same command is answered by the warm run's server, with the same output and exit code", async () => {
  const t = await install();
  const w = await world(t, "same");
  const greet = ["call", "greet", "{}", "--sandbox", "off"];
  const socket = await warmUp(t, w, greet);
  const mode = (await Deno.stat(socket)).mode! & 0o777;
  assert.equal(mode, 0o600, "the socket is its owner's alone");
  const direct = await run(t, w, greet, { ...w.env, TOOLGATE_NO_RESIDENT: "1" });
  assert.ok(!direct.resident);
  const served = await run(t, w, greet);
  assert.ok(served.resident, "the server ran it");
  assert.equal(served.ran, 1, "once");
  assert.equal(served.code, 0, served.stderr);
  assert.equal(served.stdout, direct.stdout);
  assert.deepEqual(JSON.parse(served.stdout), { ok: true, result: { greeting: "hi" }, tool: "greet" });
  // A failure too: the envelope, stderr's note and the exit code come through as they are.
  const fail = ["call", "fail", "{}", "--sandbox", "off"];
  await warmUp(t, w, fail);
  const failedDirect = await run(t, w, fail, { ...w.env, TOOLGATE_NO_RESIDENT: "1" });
  const failed = await run(t, w, fail);
  assert.ok(failed.resident);
  assert.equal(failed.code, 1);
  assert.equal(failed.code, failedDirect.code);
  assert.equal(
    failed.stdout.replace(/"duration_ms":\d+/, ""),
    failedDirect.stdout.replace(/"duration_ms":\d+/, ""),
  );
  assert.match(failed.stdout, /no luck/);
  for (const socket of await sockets(w)) await stop(socket);
});

Deno.test("resident: a client whose environment differs is not answered by the server; the tool runs once, as before", async () => {
  const t = await install();
  const w = await world(t, "env");
  const greet = ["call", "greet", "{}", "--sandbox", "off"];
  const socket = await warmUp(t, w, greet);
  const other = await run(t, w, greet, { ...w.env, GREETING: "hello" });
  assert.equal(other.code, 0, other.stderr);
  assert.ok(!other.resident, "another value of a variable the tool reads: not the server's run");
  assert.equal(other.ran, 1);
  assert.equal(JSON.parse(other.stdout).result.greeting, "hello");
  // The server is still there for its own environment.
  assert.ok((await run(t, w, greet)).resident);
  await stop(socket);
});

Deno.test("resident: a server gone or busy is a miss, and the command runs once, as before", async () => {
  const t = await install();
  const w = await world(t, "gone");
  const nap = ["call", "nap", "{}", "--sandbox", "off"];
  const socket = await warmUp(t, w, nap);
  // Busy: two at once, one the server's, one a main process's.
  const both = await Promise.all([run(t, w, nap), run(t, w, nap)]);
  for (const result of both) assert.equal(result.code, 0, result.stderr);
  assert.equal((await lines(w.runs)).length, 4, "each call ran its tool once");
  assert.equal((await lines(w.runs)).filter((line) => line.includes(` ${RESIDENT_MODE} `)).length, 1);
  // Gone: its socket stays, nobody listens; the next client removes it.
  await stop(socket);
  const after = await run(t, w, nap);
  assert.equal(after.code, 0, after.stderr);
  assert.equal(after.ran, 1, "once");
  assert.ok(!after.resident);
  // That run left a new server on the same socket.
  await until(async () => (await servers(socket)).length === 1, "a new server");
  await stop(socket);
});

Deno.test("resident: a server leaves when its socket is no longer its own", async () => {
  const t = await install();
  const w = await world(t, "leave");
  const socket = await warmUp(t, w, ["call", "greet", "{}", "--sandbox", "off"]);
  assert.equal((await servers(socket)).length, 1);
  await Deno.remove(socket);
  await until(async () => (await servers(socket)).length === 0, "the server's leaving", 10_000);
});

Deno.test("resident: the agent loop with one call then the answer is answered by the server too", async () => {
  const t = await install();
  const w = await world(t, "agent");
  const endpoint = startChatServer((request) => {
    const messages = request.body?.messages ?? [];
    if (messages.some((m: { role: string }) => m.role === "tool")) return answer("done");
    return callTools([{ id: "c0", name: "greet", args: {} }]);
  });
  try {
    const agent = [
      "--prompt",
      "go",
      "--base-url",
      endpoint.baseUrl,
      "--model",
      "m",
      "--quiet",
      "--sandbox",
      "off",
    ];
    const socket = await warmUp(t, w, agent);
    const served = await run(t, w, agent);
    assert.equal(served.code, 0, served.stderr);
    assert.ok(served.resident, "the server ran the loop and its call");
    assert.equal(served.stdout.trim(), "done");
    await stop(socket);
  } finally {
    await endpoint.close();
  }
});

Deno.test("resident: a changed decision is never answered by the server of the old one", async () => {
  const t = await install();
  const w = await world(t, "changed");
  const greet = ["call", "greet", "{}", "--sandbox", "off"];
  const old = await warmUp(t, w, greet);
  assert.ok((await run(t, w, greet)).resident);
  // The program changes (and is trusted again): the launcher's decision is recorded anew, under another MAC.
  const program = join(w.project, "tools", "bin", "greet");
  await Deno.writeTextFile(program, (await Deno.readTextFile(program)).replace("greeting", "greeting2"));
  assert.equal((await run(t, w, ["trust"])).code, 0);
  await sleep(FRESH_MS + 100);
  const first = await run(t, w, greet);
  assert.equal(first.code, 0, first.stderr);
  assert.ok(!first.resident, "the old decision's server does not answer the new one");
  assert.match(first.stdout, /greeting2/);
  const second = await run(t, w, greet);
  assert.ok(!second.resident);
  let fresh: string[] = [];
  await until(
    async () => (fresh = (await sockets(w)).filter((socket) => socket !== old)).length > 0,
    "a new socket",
  );
  assert.equal(fresh.length, 1, "the new decision's own server");
  const third = await run(t, w, greet);
  assert.ok(third.resident);
  assert.match(third.stdout, /greeting2/);
  for (const socket of await sockets(w, false)) await stop(socket);
});

Deno.test("resident: a server that ends after its go is exit 1, and the command is not run again", async () => {
  const t = await install();
  const w = await world(t, "died");
  const nap = ["call", "nap", "{}", "--sandbox", "off"];
  const socket = await warmUp(t, w, nap);
  const before = (await lines(w.runs)).length;
  const running = run(t, w, nap);
  await until(async () => (await lines(w.runs)).length > before, "the tool's start");
  for (const pid of await servers(socket)) Deno.kill(pid, "SIGKILL");
  const result = await running;
  assert.equal(result.code, 1);
  assert.match(result.stderr, /resident toolgate ended before the command did/);
  assert.equal(result.ran, 1, "once: a client never asks twice");
  await stop(socket);
});

Deno.test("resident: a client that goes away while its command runs ends the command's tree and the server", async () => {
  const t = await install();
  const w = await world(t, "away");
  const doze = ["call", "doze", "{}", "--sandbox", "off", "--tool-timeout", "120"];
  const socket = await warmUp(t, w, doze);
  await Deno.writeTextFile(`${w.runs}.long`, "");
  const before = (await lines(w.runs)).length;
  const child = new Deno.Command(t.bin, {
    args: doze,
    cwd: w.project,
    env: w.env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  await until(async () => (await lines(w.runs)).length > before, "the tool's start");
  assert.ok((await lines(w.runs)).at(-1)!.includes(` ${RESIDENT_MODE} `), "the server runs it");
  const tool = Number((await Deno.readTextFile(`${w.runs}.pid`)).trim());
  // The client: the resident entry, on this socket.
  const clients = await processes("resident.js", socket);
  assert.equal(clients.length, 1, "one client");
  Deno.kill(clients[0], "SIGKILL");
  await child.status;
  await until(async () => !(await alive(tool)), "the tool's end, long before its 60 s", 10_000);
  await until(async () => (await servers(socket)).length === 0, "the server's end", 10_000);
  // Its caller gone, the call still has its line: stopped as at SIGTERM.
  const last = await lastAuditLine(w);
  assert.equal(last.tool, "doze");
  assert.equal(last.killed_by, "shutdown", JSON.stringify(last));
  assert.equal(last.stop_signal, "SIGTERM");
});

/** The last line of the world's audit log (its default folder, under its home). */
async function lastAuditLine(w: World): Promise<Record<string, unknown>> {
  const audit = auditDirFor(w.env, w.project);
  const names = (await Array.fromAsync(Deno.readDir(audit))).map((entry) => entry.name).sort();
  const text = await Deno.readTextFile(join(audit, names.at(-1)!));
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

Deno.test("resident: a stop signal to the installed command while the server runs its call prints the envelope, writes the line, ends the tool", async () => {
  const t = await install();
  const w = await world(t, "signalled");
  const doze = ["call", "doze", "{}", "--sandbox", "off", "--tool-timeout", "120"];
  for (const [signal, code, killedBy] of [["SIGTERM", 143, "shutdown"], ["SIGINT", 130, "user"]] as const) {
    const socket = await warmUp(t, w, doze);
    await Deno.writeTextFile(`${w.runs}.long`, "");
    await Deno.remove(`${w.runs}.pid`).catch(() => {});
    const before = (await lines(w.runs)).length;
    // The pid the caller knows is the front end's shell: the signal goes there, as `timeout` or a runner sends it.
    const child = new Deno.Command(t.bin, {
      args: doze,
      cwd: w.project,
      env: w.env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    await until(async () => (await lines(w.runs)).length > before, "the tool's start");
    assert.ok((await lines(w.runs)).at(-1)!.includes(` ${RESIDENT_MODE} `), "the server runs it");
    const tool = Number((await Deno.readTextFile(`${w.runs}.pid`)).trim());
    child.kill(signal);
    const output = await child.output();
    const stdout = new TextDecoder().decode(output.stdout);
    assert.equal(output.code, code, new TextDecoder().decode(output.stderr));
    const envelope = JSON.parse(stdout);
    assert.equal(envelope.killed_by, killedBy, stdout);
    assert.equal(envelope.cancelled, true);
    await until(async () => !(await alive(tool)), "the tool's end, long before its 60 s", 10_000);
    const last = await lastAuditLine(w);
    assert.equal(last.tool, "doze");
    assert.equal(last.killed_by, killedBy, JSON.stringify(last));
    await until(async () => (await servers(socket)).length === 0, "the server's end", 10_000);
    await Deno.remove(`${w.runs}.long`);
  }
});

Deno.test("resident: a planned (cold) run never leaves a server, whatever its environment names", async () => {
  const t = await install();
  const w = await world(t, "cold");
  assert.equal((await run(t, w, ["trust"])).code, 0);
  // In the records' folder, where a main process may write: only the launcher's care keeps a server out.
  await Deno.mkdir(w.launch, { recursive: true, mode: 0o700 });
  const socket = join(w.launch, "planted.sock");
  const planted = {
    ...w.env,
    TOOLGATE_RESIDENT: socket,
    TOOLGATE_RESIDENT_MAC: "0".repeat(64),
    TOOLGATE_RESIDENT_ARGS: `${Deno.execPath()}\nrun\n--allow-all\n--allow-run=/usr/bin/setsid\n${
      join(t.root, "bundle", "main.js")
    }`,
  };
  // Run within a second of the trust: the launcher plans it and records nothing, so it is cold each time.
  for (const _ of [1, 2]) {
    const result = await run(t, w, ["call", "greet", "{}", "--sandbox", "off"], planted);
    assert.equal(result.code, 0, result.stderr);
    assert.ok(!result.resident);
  }
  await sleep(1500);
  assert.deepEqual(await servers(socket), []);
  assert.ok(!(await Deno.stat(socket).then(() => true, () => false)), "no socket");
  assert.ok(!(await Deno.stat(`${socket}.lock`).then(() => true, () => false)), "no start was tried");
});

confinedTest(
  "resident: a confined call's next process waits at its gate between commands, runs nothing, and goes with its server",
  async () => {
    const t = await install();
    const w = await world(t, "ahead");
    const log = join(w.project, "starts.log");
    const started = () => lines(log).then((found) => found.length);
    const held = () => heldAtGate(w.project);
    const note = ["call", "note", '{"n":1}'];
    const socket = await warmUp(t, w, note);
    const served = await run(t, w, note);
    assert.equal(served.code, 0, served.stderr);
    assert.deepEqual(JSON.parse(served.stdout), { ok: true, result: { args: { n: 1 } }, tool: "note" });
    await until(async () => (await held()).length > 0, "the next call's process held");
    const waiting = await held();
    await sleep(500);
    assert.equal(await started(), 3, "cold, warm, the server's: the process waiting ran nothing");
    const next = await run(t, w, note);
    assert.equal(next.stdout, served.stdout);
    assert.equal(await started(), 4, "the call ran its tool once");
    for (const pid of waiting) {
      assert.ok(!(await held()).includes(pid), "the call took the process that waited");
    }
    await until(async () => (await held()).length > 0, "held again");
    // A server gone, however it went (SIGKILL here: nothing of it runs), leaves an end of stdin: the start leaves.
    await stop(socket);
    await until(async () => (await held()).length === 0, "no start left at its gate");
    assert.equal(await started(), 4);
  },
);

/** The MACs of a world's records (each record's first line). */
async function recordMacs(w: World): Promise<string[]> {
  const macs: string[] = [];
  for await (const entry of Deno.readDir(w.launch)) {
    if (!entry.isFile || !/^[0-9a-f]{64}$/.test(entry.name)) continue;
    const [first] = (await Deno.readTextFile(join(w.launch, entry.name))).split("\n");
    if (/^[0-9a-f]{64}$/.test(first)) macs.push(first);
  }
  return macs;
}

/**
 * The command line of every process that holds `word` in it, by pid, as any local user reads it (`ps` reads
 * `/proc/PID/cmdline`, which Deno lets only --allow-all read).
 */
async function commandLines(word: string): Promise<Map<number, string>> {
  const output = await new Deno.Command("ps", { args: ["-e", "-ww", "-o", "pid=,args="], stderr: "null" })
    .output();
  const found = new Map<number, string>();
  for (const line of new TextDecoder().decode(output.stdout).split("\n")) {
    const [, pid, args] = line.match(/^\s*(\d+) (.*)$/) ?? [];
    if (args?.includes(word)) found.set(Number(pid), args);
  }
  return found;
}

Deno.test("resident: no command line of the server, its client or the front end holds the record's MAC; the server still answers", async () => {
  const t = await install();
  const w = await world(t, "mac");
  const doze = ["call", "doze", "{}", "--sandbox", "off", "--tool-timeout", "120"];
  const socket = await warmUp(t, w, doze);
  const macs = await recordMacs(w);
  assert.ok(macs.length > 0, "the warm run's record holds its MAC");
  await Deno.writeTextFile(`${w.runs}.long`, "");
  const before = (await lines(w.runs)).length;
  const running = run(t, w, doze);
  await until(async () => (await lines(w.runs)).length > before, "the tool's start");
  // Every process of the installed toolgate (its front end, its client, its server, the tool's shell), mid-command.
  const seen = await commandLines(t.root);
  const all = [...seen.values()];
  assert.ok(all.some((line) => line.includes(` ${RESIDENT_MODE} ${socket}`)), "the server is there");
  assert.ok(all.some((line) => line.includes("resident.js") && line.includes(socket)), "its client is there");
  for (const [pid, line] of seen) {
    for (const mac of macs) assert.ok(!line.includes(mac), `the MAC on the command line of ${pid}: ${line}`);
    assert.doesNotMatch(line, /[0-9a-fA-F]{64}/, `a MAC-long hex string on the command line of ${pid}`);
  }
  // The server that got its MAC another way took the command and ran it, once.
  Deno.kill(Number((await Deno.readTextFile(`${w.runs}.pid`)).trim()), "SIGKILL");
  const served = await running;
  assert.ok(served.resident, "the server ran it");
  assert.equal(served.ran, 1);
  await stop(socket);
});
