// A descriptor toolgate's own parent left open without close-on-exec (a host's pipe, a folder opened by a wrapper
// script) is handed on by Deno to every process it starts, and by bubblewrap into the sandbox: a folder's
// descriptor inside opens paths outside every bind (`/proc/self/fd/N/...`). The session starter in front of every
// start closes all but stdin, stdout and stderr, and a confined call starts through it where it is built.
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildSessionStart } from "../../src/build/native.ts";
import { denoDir, REPO, writeFiles } from "../support.ts";
import { whyMissing } from "../requires.ts";
import { hostTest, NO_BWRAP, realTempDir } from "./helpers.ts";

const NO_CC = await whyMissing("cc");

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
      "-c",
      'exec 7<"$0"; exec "$@"',
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
    const secret = await realTempDir("toolgate_inherited_secret_");
    await Deno.writeTextFile(join(secret, "secret.txt"), "s3cret");
    const dir = await realTempDir("toolgate_inherited_project_");
    await writeFiles(dir, {
      "tools.json": { tools: [{ name: "peek", command: ["./tools/bin/peek"], permissions: "none" }] },
      // Its descriptors (the listing's own is 3), and what the inherited folder's would open.
      "tools/bin/peek": [
        "#!/bin/sh",
        "fds=$(ls /proc/self/fd | tr '\\n' ' ')",
        "leaked=$(cat /proc/self/fd/7/secret.txt 2>/dev/null)",
        'printf \'{"fds":"%s","leaked":"%s"}\\n\' "$fds" "$leaked"',
      ].join("\n"),
    });
    await Deno.chmod(join(dir, "tools", "bin", "peek"), 0o755);
    const envelope = await callWithInherited(home, dir, "peek", secret);
    assert.deepEqual(envelope, { ok: true, result: { fds: "0 1 2 3 ", leaked: "" }, tool: "peek" });
  },
  NO_BWRAP === undefined ? "cc" : "bwrap",
);
