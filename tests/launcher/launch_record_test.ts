// The installed command's warm path (`src/launcher/launch_record.ts`, the front end in `src/build/install.ts`): a command run
// before starts the main runtime directly with the launcher's recorded decision; any change to an input the decision
// depends on, and any record that was edited, is a miss that takes the cold path (the launcher). The front end runs
// here with a runtime that notes each start of the launcher, so a test tells a warm run from a cold one.
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildBundle, shimText } from "../../src/build/install.ts";
import {
  FRESH_MS,
  IDENTITY_FORMAT,
  LAUNCH_VARS,
  STAT_FORMAT,
  statText,
} from "../../src/launcher/launch_record.ts";
import { writeFiles } from "../support.ts";
import { confinedTest } from "../security/helpers.ts";

interface Installed {
  readonly root: string;
  readonly bin: string;
  readonly bundle: string;
  readonly log: string;
}

let installed: Promise<Installed> | undefined;

/** One bundle for the whole file, and a front end whose runtime notes each cold start. */
function install(): Promise<Installed> {
  installed ??= (async () => {
    const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_warm_" }));
    const bundle = join(root, "data", "toolgate", "bundle");
    const built = await buildBundle(bundle);
    assert.ok(built.ok, built.ok ? "" : built.reason);
    const log = join(root, "cold.log");
    const runtime = join(root, "deno");
    await Deno.writeTextFile(runtime, `#!/bin/sh\necho cold >> '${log}'\nexec '${Deno.execPath()}' "$@"\n`, {
      mode: 0o755,
    });
    const bin = join(root, "toolgate");
    await Deno.writeTextFile(bin, shimText(runtime, { bundle }, Deno.version.deno, "build-1"), {
      mode: 0o755,
    });
    return { root, bin, bundle, log };
  })();
  return installed;
}

/** A home, and a project with a trusted workspace manifest: a program, a profile, both its own. */
async function world(t: Installed, name: string) {
  const home = join(t.root, name, "home");
  const launch = join(home, ".local", "state", "toolgate", "launch");
  const out = join(t.root, name, "parent");
  const project = join(t.root, name, "project");
  await Deno.mkdir(join(project, ".git"), { recursive: true });
  await Deno.mkdir(home, { recursive: true });
  await writeFiles(project, {
    "tools.json": {
      tools: [
        { name: "hello", command: ["./tools/bin/hello"], readOnly: true, permissions: "quiet" },
        {
          name: "parent",
          description: "writes its parent's command line and environment",
          command: ["./tools/bin/parent"],
        },
        { name: "peek", description: "tries to read the launch records", command: ["./tools/bin/peek"] },
      ],
    },
    "permissions/quiet.json": { write: [] },
    "tools/bin/hello": "#!/bin/sh\necho '{\"hi\":1}'\n",
    "tools/bin/parent": `#!/bin/sh\ntr '\\0' '\\n' < /proc/$PPID/cmdline > '${out}'\n` +
      `cat /proc/$PPID/environ > '${out}.env'\necho '{}'\n`,
    "tools/bin/peek":
      `#!/bin/sh\ns=$( { cat '${launch}/key' '${launch}'/*; ls '${launch}'; } 2>&1 | tr -dc 'A-Za-z0-9 /=._-')\n` +
      `printf '{"seen":"%s"}\\n' "$s"\n`,
  });
  const env: Record<string, string> = { HOME: home, PATH: "/usr/local/bin:/usr/bin:/bin", NO_COLOR: "1" };
  const dir = Deno.env.get("DENO_DIR");
  if (dir !== undefined) env.DENO_DIR = dir;
  return { home, project, env, launch, out };
}

/** Runs the installed command; `warm` says whether the launcher stayed out of it. */
async function run(
  t: Installed,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
  bin = t.bin,
): Promise<{ code: number; stdout: string; stderr: string; warm: boolean }> {
  await Deno.writeTextFile(t.log, "");
  const output = await new Deno.Command(bin, { args: [...args], cwd, env, clearEnv: true, stdin: "null" })
    .output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
    warm: (await Deno.readTextFile(t.log)) === "",
  };
}

/** Waits until whatever was just written is old enough to be recorded, then records the command and checks it warm. */
async function settle(t: Installed, args: readonly string[], cwd: string, env: Record<string, string>) {
  await new Promise((done) => setTimeout(done, FRESH_MS + 100));
  const cold = await run(t, args, cwd, { ...env, TOOLGATE_LAUNCH_WHY: "1" });
  assert.equal(cold.code, 0, cold.stderr);
  const warm = await run(t, args, cwd, env);
  assert.equal(warm.code, 0, warm.stderr);
  assert.ok(warm.warm, `a repeated command is warm (${cold.stderr})`);
  assert.equal(warm.stdout.replace(/\d/g, "0"), cold.stdout.replace(/\d/g, "0"));
}

const HELLO = ["call", "hello", "{}"];

Deno.test("warm path: a repeated command skips the launcher; each input it depends on is a miss", async () => {
  const t = await install();
  const w = await world(t, "inputs");
  const trust = await run(t, ["trust"], w.project, w.env);
  assert.equal(trust.code, 0, trust.stderr);
  await settle(t, HELLO, w.project, w.env);
  const miss = async (what: string, args: readonly string[], cwd: string, env: Record<string, string>) => {
    const result = await run(t, args, cwd, env);
    assert.ok(!result.warm, `${what} is a miss`);
  };
  await miss("another argument", ["call", "hello", "{ }"], w.project, w.env);
  await Deno.mkdir(join(w.project, "sub"));
  await miss("another folder", HELLO, join(w.project, "sub"), w.env);
  for (const name of LAUNCH_VARS) {
    // The front end sets TOOLGATE_CGROUP itself, from its own cgroups.
    if (name === "TOOLGATE_CGROUP") continue;
    const value = w.env[name] === undefined ? join(t.root, "x") : `${w.env[name]}:/x`;
    await miss(`${name} set`, HELLO, w.project, { ...w.env, [name]: value });
  }
  await miss("HOME empty", HELLO, w.project, { ...w.env, HOME: "" });
  assert.ok((await run(t, HELLO, w.project, w.env)).warm, "and back as it was, warm again");

  // A manifest edited (and trusted again), a profile, a program, the trust record, toolgate's own code.
  const edits: [string, () => Promise<void>][] = [
    ["the manifest edited", async () => {
      const path = join(w.project, "tools.json");
      await Deno.writeTextFile(path, (await Deno.readTextFile(path)) + "\n");
      assert.equal((await run(t, ["trust"], w.project, w.env)).code, 0);
    }],
    ["a profile changed", () => writeFiles(w.project, { "permissions/quiet.json": { write: [], env: [] } })],
    [
      "a program changed",
      () => writeFiles(w.project, { "tools/bin/hello": "#!/bin/sh\necho '{\"hi\":2}'\n" }),
    ],
    ["the trust record replaced", async () => {
      // The same text in a new file: the front end cannot read it, only see that it is another.
      const trust = join(w.home, ".local", "state", "toolgate", "trust");
      for await (const entry of Deno.readDir(trust)) {
        const path = join(trust, entry.name);
        await Deno.writeTextFile(`${path}.new`, await Deno.readTextFile(path), { mode: 0o600 });
        await Deno.rename(`${path}.new`, path);
      }
    }],
    ["the bundle's main entry changed", async () => {
      const main = join(t.bundle, "main.js");
      await Deno.writeTextFile(main, await Deno.readTextFile(main));
    }],
  ];
  for (const [what, edit] of edits) {
    await edit();
    await miss(what, HELLO, w.project, w.env);
    // Changed files are fresh: the cold run above could not record; once they are older, it does.
    // A changed profile or program is no longer trusted: the user trusts it again.
    if (what === "a program changed" || what === "a profile changed") {
      assert.equal((await run(t, ["trust"], w.project, w.env)).code, 0);
    }
    await settle(t, HELLO, w.project, w.env);
  }
  // A manifest that appears nearer the folder than the one used (here, toolgate's own belt).
  await Deno.mkdir(join(w.project, "deep", ".git"), { recursive: true });
  const time = ["call", "get_time", '{"timezone":"UTC"}'];
  await settle(t, time, join(w.project, "deep"), w.env);
  await Deno.writeTextFile(join(w.project, "deep", "tools.json"), '{"tools":[]}');
  await miss("a new manifest found first", time, join(w.project, "deep"), w.env);
  await Deno.remove(join(w.project, "deep", "tools.json"));
  // Another build of toolgate (a new install) is a miss.
  const other = join(t.root, "toolgate-2");
  await Deno.writeTextFile(other, (await Deno.readTextFile(t.bin)).replace("'build-1'", "'build-2'"), {
    mode: 0o755,
  });
  assert.ok(!(await run(t, HELLO, w.project, w.env, other)).warm, "another build is a miss");
});

Deno.test("warm path: an untrusted manifest is never warm with the trusted one's grants", async () => {
  const t = await install();
  const w = await world(t, "untrusted");
  assert.equal((await run(t, ["trust"], w.project, w.env)).code, 0);
  await settle(t, HELLO, w.project, w.env);
  // The record of trust goes away (`toolgate trust --forget`, or another state): the same command is cold.
  const state = join(w.home, ".local", "state", "toolgate");
  for await (const entry of Deno.readDir(state)) {
    if (entry.name.startsWith("trust")) await Deno.remove(join(state, entry.name), { recursive: true });
  }
  const untrusted = await run(t, HELLO, w.project, w.env);
  assert.ok(!untrusted.warm);
  assert.notEqual(untrusted.code, 0, "the untrusted manifest's tool does not run");
});

Deno.test("warm path: a record edited, cut short or re-keyed is refused and the cold path taken", async () => {
  const t = await install();
  const w = await world(t, "tamper");
  assert.equal((await run(t, ["trust"], w.project, w.env)).code, 0);
  await settle(t, HELLO, w.project, w.env);
  const records = async () => {
    const names: string[] = [];
    for await (const entry of Deno.readDir(w.launch)) {
      if (/^[0-9a-f]{64}$/.test(entry.name)) names.push(entry.name);
    }
    assert.equal(names.length, 1);
    return join(w.launch, names[0]);
  };
  const tampers: [string, (text: string) => string][] = [
    ["a broader grant", (text) => text.replace(/^A --allow-read=.*$/m, "A --allow-all")],
    ["a variable added", (text) => `${text}E TOOLGATE_BWRAP=/tmp/evil\n`],
    ["a file dropped from the check", (text) => text.replace(/^P .*tools\.json\n/m, "")],
    ["a line the front end does not know", (text) => `${text}X echo pwned\n`],
    ["cut short", (text) => text.slice(0, text.length - 10)],
    ["another MAC", (text) => `${"0".repeat(64)}${text.slice(64)}`],
  ];
  for (const [what, tamper] of tampers) {
    const record = await records();
    const text = await Deno.readTextFile(record);
    await Deno.writeTextFile(record, tamper(text));
    const result = await run(t, HELLO, w.project, w.env);
    assert.ok(!result.warm, `${what}: refused`);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /"hi":1/);
    // The cold run recorded the decision again, whole.
    assert.equal(await Deno.readTextFile(await records()), text, what);
    assert.ok((await run(t, HELLO, w.project, w.env)).warm, `${what}: warm again`);
  }
  // Another key: every record is refused.
  await Deno.writeTextFile(join(w.launch, "key"), "0".repeat(64) + "\n");
  assert.ok(!(await run(t, HELLO, w.project, w.env)).warm, "a new key refuses old records");
});

Deno.test("warm path: the main runtime gets the very command line and environment it gets on the cold path", async () => {
  const t = await install();
  const w = await world(t, "same");
  assert.equal((await run(t, ["trust"], w.project, w.env)).code, 0);
  const out = w.out;
  const args = ["call", "parent", "{}", "--sandbox", "off"];
  await new Promise((done) => setTimeout(done, FRESH_MS + 100));
  const seen: { cmdline: string; environ: string[] }[] = [];
  for (const expectWarm of [false, true]) {
    // The tool's program (sh) gets its first argument from the manifest's command line: the output file.
    const result = await run(t, args, w.project, w.env);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.equal(result.warm, expectWarm);
    seen.push({
      cmdline: await Deno.readTextFile(out),
      environ: (await Deno.readTextFile(`${out}.env`)).split("\0").filter((entry) => entry !== "").sort(),
    });
  }
  assert.match(seen[0].cmdline, /--allow-read=/);
  assert.equal(seen[1].cmdline, seen[0].cmdline, "the same runtime, flags, entry and arguments");
  // With no terminal, the warm run also names its resident server's socket and command line: its own.
  const [cold, warm] = seen.map(({ environ }) => ({
    resident: environ.filter((entry) => entry.startsWith("TOOLGATE_RESIDENT")),
    rest: environ.filter((entry) => !entry.startsWith("TOOLGATE_RESIDENT")),
  }));
  assert.deepEqual(cold.resident, [], "the cold run asks for no resident server");
  assert.equal(warm.resident.length, 3);
  assert.match(warm.resident[0], /^TOOLGATE_RESIDENT=\/.*\/launch\/[0-9a-f]{16}\.sock$/);
  assert.match(warm.resident[2], /^TOOLGATE_RESIDENT_MAC=[0-9a-f]{64}$/);
  const recorded = warm.resident[1].slice("TOOLGATE_RESIDENT_ARGS=".length).split("\n").filter((line) =>
    line !== ""
  );
  const cmdline = seen[0].cmdline.split("\n").filter((line) => line !== "");
  assert.deepEqual(
    recorded,
    cmdline.slice(0, -args.length),
    "the resident server's command line is the run's own",
  );
  assert.deepEqual(warm.rest, cold.rest, "the same environment");
});

confinedTest(
  "warm path: a confined tool can neither read nor list the recorded decisions, even with home as its workspace",
  async () => {
    const t = await install();
    const w = await world(t, "peek");
    assert.equal((await run(t, ["trust"], w.project, w.env)).code, 0);
    // `--cwd` moves the manifest's lookup too: the project's is named, its workspace the home folder.
    const tools = join(w.project, "tools.json");
    const args = ["call", "peek", "{}", "--sandbox", "require", "--cwd", w.home, "--tools", tools];
    await settle(t, args, w.project, w.env);
    const key = (await Deno.readTextFile(join(w.launch, "key"))).trim();
    const records = [];
    for await (const entry of Deno.readDir(w.launch)) records.push(entry.name);
    assert.ok(records.length >= 2, "a key and a record");
    const result = await run(t, args, w.project, w.env);
    assert.ok(result.warm);
    const seen = result.stdout + result.stderr;
    assert.ok(!seen.includes(key), "the key stays unread");
    for (const name of records.filter((name) => name !== "key")) {
      assert.ok(!seen.includes(name), `${name} stays unlisted`);
    }
    assert.ok(!seen.includes("--allow-read="), "no record's text is read");
    assert.match(
      JSON.parse(result.stdout).result.seen,
      /No such file or directory/,
      "the tool ran and saw nothing",
    );
  },
);

Deno.test("warm path: the launcher's stat text is what stat(1) prints in the shell, byte for byte", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "file");
  await Deno.writeTextFile(file, "x");
  await Deno.symlink(file, join(dir, "link"));
  const paths = [dir, file, join(dir, "link"), join(dir, "missing"), "/dev/null", Deno.execPath()];
  for (const [format, content] of [[STAT_FORMAT, true], [IDENTITY_FORMAT, false]] as const) {
    const shell = await new Deno.Command("stat", {
      args: ["-L", "-c", format, "--", ...paths],
      env: { LC_ALL: "C" },
      stdout: "piped",
      stderr: "null",
    }).output();
    assert.equal(statText(paths, content), new TextDecoder().decode(shell.stdout));
  }
});
