// toolgate's own permissions: the least set is derived at launch for each run, the `toolgate` command (the
// launcher, as `deno task agent` runs it) starts every command under exactly that set from any folder, and broader
// grants are warned about or, locked, refused.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { planLaunch, scanArgs, VALUE_OPTIONS } from "../../src/launcher/launch_plan.ts";
import { COMMANDS } from "../../src/main.ts";
import { GLOBAL_OPTIONS } from "../../src/commands/cli.ts";
import { OWN_ENV, toFlags } from "../../src/launcher/own_grants.ts";
import { stateRoot } from "../../src/state/state.ts";
import { cliArgs, REPO, runProgram, runToolgate } from "../support.ts";

const SANDBOX_FIXTURE = fileURLToPath(new URL("../fixtures/sandbox/tools.json", import.meta.url));
const BWRAP_FOUND = new Deno.Command("sh", { args: ["-c", "command -v bwrap"], stdout: "null" }).outputSync()
  .success;

/** Runs `toolgate ARGS` the way the README does (the launcher), typed in `cwd`. */
const toolgate = runToolgate;

/** The line that says a run uses the built-in belt (the folder has no tools.json, and none is above it). */
const BELT_LINE = "toolgate: using the built-in tool belt (no tools.json here or up to the project's root)";

Deno.test("the launcher reads every option that takes a value as the commands do", () => {
  const names = new Set<string>();
  for (const options of [GLOBAL_OPTIONS, ...COMMANDS.map((c) => c.options)]) {
    for (const [name, spec] of Object.entries(options)) if (spec.type === "string") names.add(name);
  }
  assert.deepEqual([...VALUE_OPTIONS].sort(), [...names].sort());
  const scanned = scanArgs(["-tools", "t.json", "--cwd=/w", "call", "get_time", "{}"]);
  assert.equal(scanned.command, "call");
  assert.equal(scanned.values.get("tools"), "t.json");
  assert.equal(scanned.values.get("cwd"), "/w");
  assert.equal(scanArgs(["--prompt", "call"]).command, "run", "an agent option means the agent loop");
});

Deno.test("the derived set names what the run touches, every grant scoped and absolute", async () => {
  const workspace = await Deno.realPath(await Deno.makeTempDir());
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/home/someone", FIXTURE_SECRET: "x" };
  const plan = await planLaunch(
    ["--tools", SANDBOX_FIXTURE, "call", "writer_workspace", "{}"],
    env,
    workspace,
  );
  const { set } = plan;
  assert.ok(set.read.includes(join(REPO, "tests", "fixtures", "sandbox")), "the manifest's folder");
  assert.ok(set.read.includes(workspace), "the workspace");
  assert.ok(set.read.includes(Deno.execPath()), "the runtime");
  assert.deepEqual(set.write, [stateRoot(env), "/home/someone/.config/toolgate"], "toolgate's state only");
  assert.ok(set.run.includes(join(REPO, "tests/fixtures/sandbox/tools/bin/writer")));
  assert.equal(set.run.filter((p) => p.endsWith("/writer")).length, 1, "one entry per program");
  assert.ok(
    set.run.every((p) => p.startsWith("/")),
    "programs by absolute path: nothing is looked up on PATH",
  );
  assert.deepEqual(set.env, [...OWN_ENV, "FIXTURE_SECRET"]);
  assert.deepEqual(set.net, [], "call talks to no network");
  assert.deepEqual(set.sys, ["uid"]);
  assert.ok(toFlags(set).every((flag) => flag === "--no-prompt" || /^--allow-[a-z]+=\S+$/.test(flag)));
});

Deno.test("the endpoint, the listening port and transcript files are granted for the runs that use them", async () => {
  const cwd = await Deno.makeTempDir();
  const env = { PATH: "/usr/bin:/bin", HOME: "/home/someone" };
  assert.deepEqual((await planLaunch(["--prompt", "hi"], env, cwd)).set.net, ["api.openai.com:443"]);
  assert.deepEqual(
    (await planLaunch(["--prompt", "hi"], { ...env, OPENAI_BASE_URL: "http://127.0.0.1:8080/v1" }, cwd)).set
      .net,
    ["127.0.0.1:8080"],
    "OPENAI_BASE_URL, as the OpenAI SDKs name it",
  );
  assert.deepEqual(
    (await planLaunch(["run", "--base-url", "http://localhost:1234/v1", "--prompt", "x"], env, cwd)).set.net,
    ["localhost:1234"],
  );
  assert.deepEqual((await planLaunch(["serve", "--http", "8765"], env, cwd)).set.net, ["127.0.0.1:8765"]);
  assert.deepEqual((await planLaunch(["serve", "--http", "0", "--host", "::1"], env, cwd)).set.net, [
    "[::1]",
  ]);
  // The console listens on loopback only, beside (or without) --http; its port is the value after --console.
  assert.deepEqual((await planLaunch(["serve", "--console", "8766"], env, cwd)).set.net, ["127.0.0.1:8766"]);
  assert.deepEqual(
    (await planLaunch(["serve", "--http", "8765", "--console", "0", "--host", "::1"], env, cwd)).set.net,
    ["[::1]:8765", "127.0.0.1"],
  );
  // The agent loop's console too (the endpoint beside it); a worker's beside its pool (see the pool tests).
  assert.deepEqual(
    (await planLaunch(
      ["run", "--base-url", "http://localhost:1234/v1", "--console", "0", "--prompt", "x"],
      env,
      cwd,
    ))
      .set.net,
    ["localhost:1234", "127.0.0.1"],
  );
  // A bare --console is a free port: the prompt after it stays the prompt, and the run is still the agent loop.
  assert.deepEqual(
    (await planLaunch(
      ["run", "--base-url", "http://localhost:1234/v1", "--console", "--prompt", "x"],
      env,
      cwd,
    ))
      .set.net,
    ["localhost:1234", "127.0.0.1"],
  );
  assert.deepEqual((await planLaunch(["serve", "--console"], env, cwd)).set.net, ["127.0.0.1"]);
  const saving = (await planLaunch(["--prompt", "x", "--save-messages", "out/run.json"], env, cwd)).set;
  assert.ok(saving.write.includes(join(cwd, "out/run.json")));
  assert.ok(saving.write.includes(join(cwd, "out/run.json.tmp")));
  assert.ok(!saving.write.includes(join(cwd, "out")), "the file and its temporary file, not the folder");
  // Deno's rename of the temporary file over the file needs read of both names too (issue 24, item 8).
  assert.ok(
    saving.read.includes(join(cwd, "out/run.json")) && saving.read.includes(join(cwd, "out/run.json.tmp")),
  );
});

Deno.test("a worker pool's servers, credential files and key file are granted to the runs that reach it, and only them", async () => {
  const cwd = await Deno.makeTempDir();
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/someone",
    NATS_CREDS: "pool.creds",
    NATS_CA: "/etc/ca.pem",
  };
  const caller =
    (await planLaunch(["call", "get_time", "{}", "--executor", "tls://queue.internal"], env, cwd)).set;
  assert.deepEqual(caller.net, ["queue.internal:4222"]);
  assert.ok(caller.read.includes(join(cwd, "pool.creds")) && caller.read.includes("/etc/ca.pem"));
  assert.deepEqual(caller.sys, ["uid"]);
  const worker =
    (await planLaunch(["worker", "--nats", "nats://10.0.0.5:4333,nats://10.0.0.6:4333"], env, cwd)).set;
  assert.deepEqual(worker.net, ["10.0.0.5:4333", "10.0.0.6:4333"]);
  assert.deepEqual(worker.sys, ["uid", "hostname"], "a worker names itself by its host");
  const fromEnv = (await planLaunch(["worker"], { ...env, NATS_URL: "nats://127.0.0.1:4222" }, cwd)).set;
  assert.deepEqual(fromEnv.net, ["127.0.0.1:4222"], "NATS_URL, as the NATS tools name it");
  // The pool's signing key: the file --pool-key-file or TOOLGATE_POOL_KEY_FILE names, read by pool runs only.
  const keyed = (await planLaunch(
    ["call", "get_time", "{}", "--executor", "nats://q", "--pool-key-file", "keys/pool.key"],
    env,
    cwd,
  )).set;
  assert.ok(keyed.read.includes(join(cwd, "keys/pool.key")));
  const keyEnv = { ...env, TOOLGATE_POOL_KEY_FILE: "/etc/toolgate/pool.key" };
  const keyedWorker = (await planLaunch(["worker", "--nats", "nats://q"], keyEnv, cwd)).set;
  assert.ok(keyedWorker.read.includes("/etc/toolgate/pool.key"));
  assert.ok(keyedWorker.env.includes("TOOLGATE_POOL_KEY_FILE"));
  for (const argv of [["call", "get_time"], ["call", "get_time", "--executor", "local"], ["serve"]]) {
    const set = (await planLaunch(argv, keyEnv, cwd)).set;
    assert.deepEqual(set.net, [], argv.join(" "));
    assert.ok(!set.read.includes(join(cwd, "pool.creds")), "no pool, no credentials read");
    assert.ok(!set.read.includes("/etc/toolgate/pool.key"), "no pool, no key read");
  }
});

Deno.test("from another folder, validate, list and call work under exactly the least set, with no noise", async () => {
  const elsewhere = await Deno.makeTempDir();
  await Deno.writeTextFile(join(elsewhere, "a.txt"), "hello\n");
  const env = { XDG_STATE_HOME: await Deno.makeTempDir() };
  const validate = await toolgate(["validate", "--locked"], elsewhere, env);
  assert.equal(validate.code, 0, validate.stderr);
  assert.match(validate.stdout, /tools\.json: valid, 13 tools/, "the built-in belt when the folder has none");
  // One line says which manifest is in use when it is not ./tools.json (issue 23): nothing else.
  assert.equal(validate.stderr, `${BELT_LINE}\n`);
  const list = await toolgate(["list", "--format", "names", "--locked"], elsewhere, env);
  assert.equal(list.code, 0, list.stderr);
  assert.ok(list.stdout.split("\n").includes("fs_list_dir"));
  for (const sandbox of ["auto", "off"]) {
    const call = await toolgate(
      ["call", "fs_list_dir", '{"path":"."}', "--sandbox", sandbox, "--locked"],
      elsewhere,
      env,
    );
    assert.equal(call.code, 0, call.stderr);
    assert.deepEqual(JSON.parse(call.stdout).result.entries.map((e: { name: string }) => e.name), ["a.txt"]);
    assert.doesNotMatch(call.stderr, /Info|Failed to resolve|broader/);
    if (sandbox === "off") assert.match(call.stderr, /the sandbox is off/);
    else if (BWRAP_FOUND) assert.equal(call.stderr, `${BELT_LINE}\n`);
    else assert.match(call.stderr, /cannot be confined here.*--sandbox require/);
  }
});

Deno.test("with bubblewrap off the PATH, the launcher says so once and prints no runtime noise", async () => {
  const bin = await Deno.makeTempDir();
  await Deno.symlink("/bin/kill", join(bin, "kill")).catch(() =>
    Deno.symlink("/usr/bin/kill", join(bin, "kill"))
  );
  const cwd = await Deno.makeTempDir();
  const call = await toolgate(["call", "get_time", '{"timezone":"UTC"}', "--locked"], cwd, {
    PATH: bin,
    XDG_STATE_HOME: await Deno.makeTempDir(),
  });
  assert.equal(call.code, 0, call.stderr);
  assert.equal(JSON.parse(call.stdout).result.timezone, "UTC");
  const lines = call.stderr.trim().split("\n");
  assert.equal(lines.length, 2, call.stderr);
  assert.equal(lines.shift(), BELT_LINE, "which manifest is in use, first");
  assert.match(
    lines[0],
    /^toolgate: warning: tools cannot be confined here \(bubblewrap \(bwrap\) is not installed\)/,
  );
  assert.match(lines[0], /--sandbox require/);
});

Deno.test("under the least set, an unconfined tool gets its session through setsid(1), granted by path, not a fork of the runtime", async () => {
  const setsid = ["/usr/bin/setsid", "/bin/setsid"].find((path) => {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  });
  assert.ok(setsid, "setsid(1) (util-linux) is on every Linux host toolgate supports");
  const cwd = await Deno.makeTempDir();
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/home/someone" };
  const { set } = await planLaunch(["call", "get_time", "--sandbox", "off"], env, cwd);
  assert.ok(set.run.includes(setsid), "the launcher grants setsid by its path");
  // What the run's process picks under that very set, and under the same set without setsid.
  const probe = join(cwd, "probe.ts");
  await Deno.writeTextFile(
    probe,
    `import { groupLauncher } from ${JSON.stringify(join(REPO, "src", "process", "process_tree.ts"))};\n` +
      "console.log(JSON.stringify(groupLauncher()));\n",
  );
  const pick = async (run: readonly string[]) => {
    const flags = toFlags({ ...set, read: [...set.read, cwd], run: [...run] });
    const result = await runProgram(Deno.execPath(), ["run", "--quiet", ...flags, "--no-config", probe], {
      cwd,
    });
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout);
  };
  assert.deepEqual(await pick(set.run), [setsid]);
  assert.deepEqual(
    await pick(set.run.filter((path) => path !== setsid)),
    [],
    "without the grant: Deno's detached start",
  );
});

Deno.test("under the least set, an unconfined timeout still ends the whole tree (through the kill program)", async () => {
  const seconds = `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
  const cwd = await Deno.makeTempDir();
  try {
    const call = await toolgate(
      [
        "--tools",
        SANDBOX_FIXTURE,
        "call",
        "tree",
        JSON.stringify({ seconds }),
        "--sandbox",
        "off",
        "--kill-grace",
        "0.2",
        "--locked",
      ],
      cwd,
      { XDG_STATE_HOME: await Deno.makeTempDir() },
    );
    assert.equal(call.code, 1, call.stderr);
    assert.equal(JSON.parse(call.stdout).kind, "timeout");
    const left = await new Deno.Command("pgrep", { args: ["-f", `sleep ${seconds}`], stdout: "piped" })
      .output();
    assert.equal(new TextDecoder().decode(left.stdout).trim(), "", "no process of the tree may survive");
  } finally {
    await new Deno.Command("pkill", { args: ["-KILL", "-f", `sleep ${seconds}`] }).output();
  }
});

Deno.test("broader grants are warned about, and refused with --locked", async () => {
  const warned = await runProgram(Deno.execPath(), cliArgs(["--allow-all"], ["validate"]), { cwd: REPO });
  assert.equal(warned.code, 0);
  assert.match(warned.stderr, /warning: broader permissions than needed/);
  assert.match(warned.stderr, /--allow-run \(unscoped\)/);
  const flags = toFlags((await planLaunch(["validate"], Deno.env.toObject(), REPO)).set).map((f) =>
    f.startsWith("--allow-run=") ? "--allow-run" : f
  );
  const locked = await runProgram(Deno.execPath(), cliArgs(flags, ["validate", "--locked"]), {
    cwd: REPO,
  });
  assert.equal(locked.code, 1);
  assert.match(locked.stderr, /refusing to start \(--locked\)/);
  assert.match(locked.stderr, /--allow-run \(unscoped\)/);
  assert.doesNotMatch(locked.stderr, /--allow-read \(unscoped\)/);
  assert.equal(locked.stdout, "");
});

Deno.test("the permissions command prints the set a command line runs under", async () => {
  const cwd = await Deno.makeTempDir();
  const env = { XDG_STATE_HOME: await Deno.makeTempDir() };
  const asFlags = await toolgate(["permissions", "--", "call", "get_time"], cwd, env);
  assert.equal(asFlags.code, 0, asFlags.stderr);
  const words = asFlags.stdout.trim().split(" ");
  const real = await Deno.realPath(cwd);
  assert.equal(words[0], "--no-prompt");
  assert.ok(words.some((w) => w.startsWith("--allow-read=") && w.includes(real)));
  const asJson = await toolgate(
    [
      "permissions",
      "--format",
      "json",
      "--",
      "run",
      "--base-url",
      "http://localhost:1234/v1",
      "--prompt",
      "x",
    ],
    cwd,
    env,
  );
  assert.deepEqual(JSON.parse(asJson.stdout).net, ["localhost:1234"]);
  const bad = await toolgate(["permissions", "--format", "yaml"], cwd, env);
  assert.equal(bad.code, 2);
});

Deno.test("declared secrets may be read from the environment, and secret-tool found on PATH may run", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir());
  try {
    const bin = join(cwd, "bin");
    await Deno.mkdir(bin);
    await Deno.writeTextFile(join(bin, "secret-tool"), "#!/bin/sh\nexit 1\n", { mode: 0o755 });
    await Deno.writeTextFile(
      join(cwd, "tools.json"),
      JSON.stringify({ tools: [{ name: "gh", command: ["./tools/bin/gh"], secrets: ["github_token"] }] }),
    );
    const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: "/home/someone" };
    // Named on the command line: trusted for this run (a tools.json found here would have to be trusted first).
    const { set } = await planLaunch(["--tools", join(cwd, "tools.json"), "call", "gh", "{}"], env, cwd);
    assert.ok(set.env.includes("GITHUB_TOKEN"));
    assert.ok(set.run.includes(join(bin, "secret-tool")));
    assert.deepEqual(
      set.write,
      [stateRoot(env), "/home/someone/.config/toolgate"],
      "the store is in the config folder",
    );
    const secrets = (await planLaunch(["secrets", "set", "X"], { ...env, PATH: "/usr/bin:/bin" }, cwd)).set;
    assert.ok(!secrets.run.some((p) => p.endsWith("/secret-tool")), "none on PATH, none granted");
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("validate and lint start no tool: no grant to run the programs, no read grant per program in the manifest's folder", async () => {
  // A long list of single files slowed every permission check of `validate` on a 1,000-tool manifest (51x a
  // hello-world, against 6.8x): the programs lie in the manifest's folder, which is granted whole.
  const dir = await Deno.realPath(await Deno.makeTempDir());
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  const tools = Array.from({ length: 3 }, (_, i) => ({ name: `t${i}`, command: [`./tools/bin/t${i}`] }));
  for (const tool of tools) {
    await Deno.writeTextFile(join(dir, tool.command[0]), "#!/bin/sh\n", { mode: 0o755 });
  }
  await Deno.writeTextFile(join(dir, "tools.json"), JSON.stringify({ tools }));
  const programs = tools.map((tool) => join(dir, "tools", "bin", tool.name));
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/home/someone" };
  for (const command of ["validate", "lint"]) {
    const plan = await planLaunch([command, "--tools", join(dir, "tools.json")], env, dir);
    assert.ok(plan.set.read.includes(dir), `${command}: the manifest's folder is readable`);
    for (const program of programs) {
      assert.ok(!plan.set.run.includes(program), `${command} may not start ${program}`);
      assert.ok(
        !plan.set.read.includes(program),
        `${command}: ${program} is read through its folder's grant`,
      );
    }
  }
  // A command that calls the tools still may start them.
  const call = await planLaunch(["call", "--tools", join(dir, "tools.json"), "t0"], env, dir);
  assert.ok(programs.every((program) => call.set.run.includes(program)));
  // A program outside the manifest's folder and the workspace is still granted to validate, to be checked.
  const outside = await Deno.realPath(await Deno.makeTempDir());
  await Deno.writeTextFile(join(outside, "p"), "#!/bin/sh\n", { mode: 0o755 });
  await Deno.writeTextFile(
    join(dir, "abs.json"),
    JSON.stringify({ tools: [{ name: "p", command: [join(outside, "p")] }] }),
  );
  const validate = await planLaunch(["validate", "--tools", join(dir, "abs.json")], env, dir);
  assert.ok(validate.set.read.includes(join(outside, "p")));
});

Deno.test("traces: the OTLP endpoint's host is granted --allow-net when the OTEL variables name one, and only then", async () => {
  const cwd = await Deno.makeTempDir();
  const env = { PATH: "/usr/bin:/bin", HOME: "/root" };
  const call = ["call", "get_time", "{}"];
  assert.deepEqual((await planLaunch(call, env, cwd)).set.net, [], "no variables: no network");
  const traced =
    (await planLaunch(call, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, cwd)).set;
  assert.deepEqual(traced.net, ["collector:4318"]);
  // The traces endpoint of its own wins; https's default port; OTEL_SDK_DISABLED turns it all off.
  const own = {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://b",
  };
  assert.deepEqual((await planLaunch(["serve"], own, cwd)).set.net, ["b:443"]);
  const off = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" };
  assert.deepEqual((await planLaunch(call, off, cwd)).set.net, []);
  // A command that starts no tool traces nothing.
  assert.deepEqual(
    (await planLaunch(["validate"], { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:1" }, cwd)).set.net,
    [],
  );
  // The variables are readable whether set or not (reading an unset one is harmless); the SDK reads no others.
  for (
    const name of [
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_SERVICE_NAME",
      "OTEL_SDK_DISABLED",
    ]
  ) {
    assert.ok(traced.env.includes(name), name);
  }
});
