// The binary `deno task compile` builds cannot be made here (denort is not downloadable), so this builds the very
// same entry with `deno bundle` and runs it with the flags compile bakes in, from another folder, with a Deno that
// is not on PATH: every built-in tool must run with that runtime, in tool mode of the bundle.
import assert from "node:assert/strict";
import { join } from "node:path";
import { compileFlags } from "../src/build/flags.ts";
import { denortMissing } from "../src/build/compile.ts";
import { denoDir, hasStackTrace, REPO, runProgram } from "./support.ts";
import { answer, startChatServer } from "./agent/chat_server.ts";
import { facilityTest } from "./requires.ts";

const bundleDir = await Deno.makeTempDir();
const BUNDLE = join(bundleDir, "toolgate.js");
const built = await new Deno.Command(Deno.execPath(), {
  args: [
    "bundle",
    "--quiet",
    "--config",
    join(REPO, "deno.json"),
    join(REPO, "src", "main.ts"),
    "-o",
    BUNDLE,
  ],
  env: { NO_COLOR: "1" },
  stdout: "piped",
  stderr: "piped",
}).output();

/** A PATH with the usual system folders and no `deno` (this runtime lives elsewhere, or is hidden here). */
async function pathWithoutDeno(): Promise<string> {
  const bin = await Deno.makeTempDir();
  for (const program of ["kill", "cat", "sh", "true", "bwrap", "prlimit"]) {
    for (const dir of ["/usr/bin", "/bin"]) {
      try {
        await Deno.symlink(join(dir, program), join(bin, program));
        break;
      } catch {
        // Not in this folder.
      }
    }
  }
  return bin;
}

const CALLS: [string, unknown][] = [
  ["get_time", { timezone: "Asia/Kolkata" }],
  ["fs_read_file", { path: "a.txt" }],
  ["fs_read_lines", { path: "a.txt", start_line: 1, end_line: 1 }],
  ["fs_list_dir", { path: "." }],
  ["fs_search", { pattern: "hello" }],
  ["fs_stat", { path: "a.txt" }],
  ["fs_write_file", { path: "b.txt", content: "written\n" }],
  ["fs_edit", { path: "b.txt", old_string: "written", new_string: "edited" }],
  ["fs_mkdir", { path: "made" }],
  ["fs_remove", { path: "made" }],
  ["exec", { argv: ["/bin/sh", "-c", "echo ran"] }],
  ["http_fetch", { url: "http://127.0.0.1:PORT/" }],
];

Deno.test("the bundled entry runs every built-in tool from another folder, under the baked flags, with no deno on PATH", async () => {
  assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));
  // The state folder of the user who builds it is baked in: the same one the runs below use.
  const state = await Deno.makeTempDir();
  const flags = compileFlags(BUNDLE, { ...Deno.env.toObject(), XDG_STATE_HOME: state }, Deno.execPath());
  assert.ok(flags.includes("--no-prompt"));
  assert.ok(flags.every((flag) => !/^--allow-(read|write|run|env|net)$/.test(flag)), "every grant is scoped");
  const elsewhere = await Deno.makeTempDir();
  await Deno.writeTextFile(join(elsewhere, "a.txt"), "hello\n");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("pong"),
  );
  const path = await pathWithoutDeno();
  const bwrap = ["/usr/bin/bwrap", "/bin/bwrap"].find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  const env: Record<string, string> = {
    PATH: path,
    XDG_STATE_HOME: state,
    TOOLGATE_FETCH_ALLOW_HOSTS: `127.0.0.1:${server.addr.port}`,
  };
  // What the launcher tells a run: the bwrap it found (this PATH's folder is not one a run may read).
  if (bwrap) env.TOOLGATE_BWRAP = bwrap;
  // The tools that write run confined where bubblewrap is, and only unconfined by the user's say-so elsewhere.
  const sandbox = bwrap ? "require" : "off";
  try {
    const run = (...args: string[]) =>
      runProgram(Deno.execPath(), ["run", ...flags, BUNDLE, "--locked", ...args], {
        cwd: elsewhere,
        env,
        clearEnv: true,
      });
    const validate = await run("validate");
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(validate.stdout, /valid, 13 tools/);
    for (const [name, args] of CALLS) {
      const text = JSON.stringify(args).replace("PORT", String(server.addr.port));
      const call = await run("call", name, text, "--sandbox", sandbox);
      assert.equal(call.code, 0, `${name}: ${call.stdout} ${call.stderr}`);
      assert.equal(JSON.parse(call.stdout).ok, true, name);
    }
    assert.equal(await Deno.readTextFile(join(elsewhere, "b.txt")), "edited\n");
  } finally {
    await server.shutdown();
  }
});

/** Where Deno keeps the runtime it downloaded for `deno compile`: a cached one leaves nothing to download. */
const DENORT = join(denoDir(), "dl", "release", `v${Deno.version.deno}`, `denort-${Deno.build.target}.zip`);
const DENORT_CACHED = await Deno.stat(DENORT).then(
  () => `denort is cached here (${DENORT})`,
  () => undefined,
);

facilityTest("uncached_denort", DENORT_CACHED, {
  name:
    "deno task compile, without its runtime and no way to download it, says in one line what it needs and where it comes from, no backtrace",
  fn: async () => {
    // No way out: every download goes to a proxy that is not there (a machine with the runtime cached builds).
    const result = await runProgram(Deno.execPath(), ["task", "-q", "compile"], {
      cwd: REPO,
      env: {
        HTTPS_PROXY: "http://127.0.0.1:9",
        HTTP_PROXY: "http://127.0.0.1:9",
        NO_PROXY: "",
        NO_COLOR: "1",
      },
    });
    assert.notEqual(result.code, 0, "deno compile built the binary without downloading its runtime");
    const said = result.stderr.split("\n").filter((line) => line.startsWith("toolgate: "));
    assert.equal(said.length, 1, result.stderr);
    assert.match(said[0], /needs denort, the Deno runtime compiled programs run on/);
    assert.match(said[0], /https:\/\/dl\.deno\.land\/release\/v[\d.]+\/denort-[\w-]+\.zip/);
    assert.match(said[0], /DENORT_BIN=/);
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
    assert.doesNotMatch(result.stderr, /^error:/m, "Deno's own download error is replaced by the one line");
  },
});

Deno.test("compile: Deno's download error, coloured as it prints it, becomes the one line; another failure stays its own", () => {
  const offline =
    "\x1b[0m\x1b[32mDownload\x1b[0m https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip\n" +
    "\x1b[1m\x1b[31merror\x1b[0m: Writing deno compile executable to temporary file 'dist/toolgate.tmp-1'\n\n" +
    "Caused by:\n    0: Setting up base binary.\n    1: error sending request for url " +
    "(https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip): client error (Connect): dns error\n" +
    "Stack backtrace:\n   0: <unknown>\n";
  const line = denortMissing(offline, "2.9.6", "x86_64-unknown-linux-gnu");
  assert.match(line ?? "", /^toolgate: deno compile needs denort[^\n]*DENORT_BIN=[^\n]*\n$/);
  assert.equal(denortMissing('error: Module not found "file:///x.ts".\n', "2.9.6", "x"), undefined);
});

/** Runs the bundle under the flags compile bakes in, with the binary's start-up check, from `cwd`. */
function runBaked(
  args: readonly string[],
  cwd: string,
  state: string,
  extraEnv: Record<string, string> = {},
) {
  const flags = compileFlags(BUNDLE, { ...Deno.env.toObject(), XDG_STATE_HOME: state }, Deno.execPath());
  return runProgram(Deno.execPath(), ["run", ...flags, BUNDLE, ...args], {
    cwd,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      XDG_STATE_HOME: state,
      NO_COLOR: "1",
      TOOLGATE_CHECK_GRANTS: "1",
      ...extraEnv,
    },
    clearEnv: true,
  });
}

Deno.test("the binary's grants: a local model's endpoint and serve --http on loopback work under the baked flags", async () => {
  assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));
  const flags = compileFlags(BUNDLE, Deno.env.toObject(), Deno.execPath());
  assert.ok(
    flags.some((flag) => /^--allow-net=.*\b127\.0\.0\.1\b.*localhost.*\[::1\]/.test(flag)),
    flags.join(" "),
  );
  const state = await Deno.makeTempDir();
  const here = await Deno.makeTempDir();
  await using endpoint = startChatServer([answer("The local model answered.")]);
  try {
    const agent = await runBaked(
      ["--prompt", "hello", "--base-url", endpoint.baseUrl, "--model", "local-model", "--no-audit"],
      here,
      state,
    );
    assert.equal(agent.code, 0, agent.stderr);
    assert.match(agent.stdout, /The local model answered\./);

    const flagsNow = compileFlags(BUNDLE, { ...Deno.env.toObject(), XDG_STATE_HOME: state }, Deno.execPath());
    const serve = new Deno.Command(Deno.execPath(), {
      args: ["run", ...flagsNow, BUNDLE, "serve", "--http", "0", "--no-audit"],
      cwd: here,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        XDG_STATE_HOME: state,
        NO_COLOR: "1",
        TOOLGATE_CHECK_GRANTS: "1",
        TOOLGATE_MCP_TOKEN: "a-token-for-this-test-only",
      },
      clearEnv: true,
      stdout: "null",
      stderr: "piped",
    }).spawn();
    let said = "";
    const decoder = new TextDecoder();
    // Ends the read below if it never listens (its stderr closes with it).
    const timer = setTimeout(() => serve.kill("SIGKILL"), 30_000);
    for await (const chunk of serve.stderr) {
      said += decoder.decode(chunk, { stream: true });
      if (/listening on http:\/\/127\.0\.0\.1:\d+\/mcp/.test(said)) break;
    }
    clearTimeout(timer);
    try {
      serve.kill("SIGTERM");
    } catch {
      // It ended already.
    }
    await serve.status;
    assert.match(said, /listening on http:\/\/127\.0\.0\.1:\d+\/mcp/, said);
  } finally {
    await Deno.remove(state, { recursive: true });
    await Deno.remove(here, { recursive: true });
  }
});

Deno.test("the binary's grants: a run that needs more than the baked flags says so in one line at start, exit 2", async () => {
  assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));
  const state = await Deno.makeTempDir();
  const here = await Deno.makeTempDir();
  const elsewhere = await Deno.makeTempDir();
  try {
    const cases: [string[], RegExp][] = [
      // A workspace outside the folder the binary runs in.
      [["call", "fs_list_dir", "{}", "--cwd", elsewhere], new RegExp(`it lacks read ${elsewhere}`)],
      // An endpoint that is neither loopback nor the one set at build.
      [
        ["--prompt", "hi", "--model", "m", "--base-url", "http://10.9.8.7:8000/v1"],
        /it lacks net 10\.9\.8\.7:8000/,
      ],
    ];
    for (const [args, lacks] of cases) {
      const result = await runBaked(args, here, state);
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stdout}${result.stderr}`);
      assert.equal(result.stdout, "");
      const lines = result.stderr.split("\n").filter((line) => line !== "");
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0], /^toolgate: this binary cannot do this run: /);
      assert.match(lines[0], lacks);
      assert.match(lines[0], /deno task install/);
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
    }
  } finally {
    for (const dir of [state, here, elsewhere]) await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the binary's grants: a variable the tools would get but the baked flags cannot read is a warning, and the run goes on", async () => {
  assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));
  const state = await Deno.makeTempDir();
  const here = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(here, "tools", "bin"), { recursive: true });
    await Deno.writeTextFile(join(here, "tools", "bin", "show"), "#!/bin/sh\necho '{}'\n");
    await Deno.chmod(join(here, "tools", "bin", "show"), 0o755);
    await Deno.writeTextFile(
      join(here, "tools.json"),
      JSON.stringify({
        tools: [{
          name: "show",
          description: "Shows a setting.",
          command: ["./tools/bin/show"],
          readOnly: true,
          permissions: "none",
          envPassthrough: ["MY_SETTING"],
        }],
      }),
    );
    const result = await runBaked(["validate", "--tools", "tools.json"], here, state, { MY_SETTING: "x" });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /valid, 1 tool/);
    const said = result.stderr.split("\n").filter((line) => line.startsWith("toolgate: "));
    assert.equal(said.length, 1, result.stderr);
    assert.match(said[0], /^toolgate: warning: this binary cannot read MY_SETTING for its tools/);
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
  } finally {
    await Deno.remove(state, { recursive: true });
    await Deno.remove(here, { recursive: true });
  }
});
