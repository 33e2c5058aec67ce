// A descriptor toolgate's own parent left open without close-on-exec (a host's pipe, a folder opened by a wrapper
// script) is handed on by Deno to every process it starts, and by bubblewrap into the sandbox: a folder's
// descriptor inside opens paths outside every bind (`/proc/self/fd/N/...`). The session starter in front of every
// start closes all but stdin, stdout and stderr, and a confined call starts through it where it is built; where it
// is not, the installed command closes them before toolgate starts: 3 to 9 in its shell (all that every POSIX
// shell can name), from 10 up through bash.
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildSessionStart } from "../../src/build/native.ts";
import { shimText } from "../../src/build/install.ts";
import { findSessionStart } from "../../src/sandbox/session_start.ts";
import { denoDir, REPO, runProgram, writeFiles } from "../support.ts";
import { whyMissing } from "../requires.ts";
import { hostTest, NO_BWRAP, realTempDir } from "./helpers.ts";

const NO_CC = await whyMissing("cc");
const NO_BASH = await whyMissing("bash");

/** A project whose one tool, confined, prints its descriptors and what descriptor 7's (or 42's) folder's secret.txt holds. */
async function peekProject(): Promise<string> {
  const dir = await realTempDir("toolgate_inherited_project_");
  await writeFiles(dir, {
    "tools.json": { tools: [{ name: "peek", command: ["./tools/bin/peek"], permissions: "none" }] },
    // Its descriptors (the listing's own is 3), and what the inherited folder's would open.
    "tools/bin/peek": [
      "#!/bin/sh",
      "fds=$(ls /proc/self/fd | tr '\\n' ' ')",
      "leaked=$(cat /proc/self/fd/7/secret.txt /proc/self/fd/42/secret.txt 2>/dev/null)",
      'printf \'{"fds":"%s","leaked":"%s"}\\n\' "$fds" "$leaked"',
    ].join("\n"),
  });
  await Deno.chmod(join(dir, "tools", "bin", "peek"), 0o755);
  return dir;
}

/** A folder holding secret.txt, outside every sandbox. */
async function secretFolder(): Promise<string> {
  const secret = await realTempDir("toolgate_inherited_secret_");
  await Deno.writeTextFile(join(secret, "secret.txt"), "s3cret");
  return secret;
}

/** The wrapper a host might be: it opens a folder on descriptor 7 and starts a program without closing it. */
const WRAPPER = ["-c", 'exec 7<"$0"; exec "$@"'];

/** The same with the folder on descriptor 42 too, past what a POSIX shell can name (so bash opens it). */
const WRAPPER_HIGH = ["-c", 'exec 7<"$0" 42<"$0"; exec "$@"'];

/** Runs one call of `tool` in `dir` from a Deno process started with `secret` open on descriptor 7. */
async function callWithInherited(home: string, dir: string, tool: string, secret: string): Promise<unknown> {
  const script = join(dir, "..", `${crypto.randomUUID()}.ts`);
  const from = (path: string) => pathToFileURL(join(REPO, path)).href;
  await Deno.writeTextFile(
    script,
    [
      `import { Executor } from "${from("src/run/executor.ts")}";`,
      `import { loadManifest } from "${from("src/manifest/manifest.ts")}";`,
      `const loaded = await loadManifest(${JSON.stringify(join(dir, "tools.json"))});`,
      "if (!loaded.ok) throw new Error(loaded.errors.join('\\n'));",
      "const run = new Executor({",
      "  manifest: loaded.manifest, env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: Deno.env.get('HOME')! },",
      `  cwd: ${JSON.stringify(dir)}, auditDir: null, auditKey: new Uint8Array(32), sandbox: "require",`,
      "});",
      `console.log(JSON.stringify(await run.call(${JSON.stringify(tool)}, "{}")));`,
      "await run.close();",
    ].join("\n"),
  );
  // The wrapper a host might be: it opens a folder and starts toolgate without closing it.
  const output = await new Deno.Command("/bin/sh", {
    args: [
      ...WRAPPER,
      secret,
      Deno.execPath(),
      "run",
      "-A",
      "--quiet",
      "--config",
      join(REPO, "deno.json"),
      script,
    ],
    cwd: dir,
    clearEnv: true,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home, DENO_DIR: denoDir() },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  assert.equal(output.code, 0, decoder.decode(output.stderr));
  return JSON.parse(decoder.decode(output.stdout));
}

hostTest(
  "a folder's descriptor that toolgate's parent left open reaches no confined tool: it cannot read outside its binds",
  NO_BWRAP ?? NO_CC,
  async () => {
    const home = await realTempDir("toolgate_inherited_home_");
    const built = await buildSessionStart({ PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home });
    assert.ok(built.ok, built.ok ? "" : built.reason);
    const secret = await secretFolder();
    const dir = await peekProject();
    const envelope = await callWithInherited(home, dir, "peek", secret);
    assert.deepEqual(envelope, { ok: true, result: { fds: "0 1 2 3 ", leaked: "" }, tool: "peek" });
  },
  NO_BWRAP === undefined ? "cc" : "bwrap",
);

hostTest(
  "the installed command closes every descriptor its parent left open (7 and 42): without the session starter, a confined tool gets none of them",
  NO_BWRAP ?? NO_BASH,
  async () => {
    // A fresh home: no session starter is built there, so the call starts through the shells and bwrap alone.
    const home = await realTempDir("toolgate_inherited_home_");
    const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home, DENO_DIR: denoDir() };
    assert.equal(findSessionStart(env), undefined);
    const bin = join(home, "toolgate");
    await Deno.writeTextFile(bin, shimText(Deno.execPath(), { source: REPO.replace(/\/$/, "") }, "2.9.6"), {
      mode: 0o755,
    });
    const secret = await secretFolder();
    const dir = await peekProject();
    const trust = await runProgram(bin, ["trust"], { cwd: dir, env });
    assert.equal(trust.code, 0, trust.stderr);
    const call = await runProgram("bash", [...WRAPPER_HIGH, secret, bin, "call", "peek", "{}"], {
      cwd: dir,
      env,
    });
    assert.equal(call.code, 0, call.stderr);
    // Its stdio and the listing's own: descriptors 7 and 42 are gone, and so is any other the test's own parent
    // left open (this machine's session hands every process a pipe on 251).
    assert.deepEqual(JSON.parse(call.stdout), {
      ok: true,
      result: { fds: "0 1 2 3 ", leaked: "" },
      tool: "peek",
    });
  },
  NO_BWRAP === undefined ? "bash" : "bwrap",
);
