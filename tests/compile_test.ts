// The binary `deno task compile` builds cannot be made here (denort is not downloadable), so this builds the very
// same entry with `deno bundle` and runs it with the flags compile bakes in, from another folder, with a Deno that
// is not on PATH: every built-in tool must run with that runtime, in tool mode of the bundle.
import assert from "node:assert/strict";
import { join } from "node:path";
import { compileFlags } from "../src/build/flags.ts";
import { REPO, runProgram } from "./support.ts";

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
