/**
 * Check-then-open races: while a second process keeps swapping a workspace directory (or file) for a symlink out of
 * the workspace, each file tool is called many times. No read may ever return anything from outside, and no write,
 * creation or removal may ever land outside: the outside folder stays byte-identical.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runTool, type ToolRun, withWorkspace, type Workspace } from "./helpers.ts";

const SWAPPER = fileURLToPath(new URL("./race_swapper.ts", import.meta.url));
/** Calls per tool while the swapper runs. */
const TRIES = 40;
/** Calls in flight at once (each targets its own names): more pressure on the race, less waiting on start-up. */
const LANES = 4;
/** Text only the outside files hold. */
const MARK = "OUTSIDE-SECRET";

interface Swapper {
  stop(): Promise<void>;
}

/** Starts the swapper on `ws/name`, swapping it with the entries parked at `a` (its start) and `b`. */
async function startSwapper(ws: string, name: string, a: string, b: string): Promise<Swapper> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-prompt", "--allow-read", "--allow-write", SWAPPER, ws, name, a, b],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  assert.match(new TextDecoder().decode(value), /ready/);
  return {
    async stop() {
      child.kill("SIGKILL");
      await child.status;
      await reader.cancel();
    },
  };
}

/** Every file under `dir` with its contents (links as their targets): what "byte-identical" compares. */
async function contents(dir: string, prefix = ""): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    const key = prefix + entry.name;
    if (entry.isSymlink) found[key] = `-> ${await Deno.readLink(path)}`;
    else if (entry.isDirectory) Object.assign(found, { [key + "/"]: "" }, await contents(path, key + "/"));
    else found[key] = await Deno.readTextFile(path);
  }
  return found;
}

/**
 * The directory race: `d` swaps between a real directory (inside files say "inside") and a symlink to the outside
 * folder (its files say MARK, and it holds `only_outside.txt`). Names `f0.txt`..., `t0/`... exist on both sides.
 */
async function prepareDirectoryRace(w: Workspace, linkTarget = "../outside"): Promise<void> {
  await Deno.mkdir(join(w.ws, "d"));
  for (let i = 0; i < TRIES; i++) {
    await w.write(`d/f${i}.txt`, "inside\n");
    await w.write(`d/t${i}/x.txt`, "inside\n");
    await Deno.writeTextFile(join(w.outside, `f${i}.txt`), `${MARK} ${i}\n`);
    await Deno.mkdir(join(w.outside, `t${i}`));
    await Deno.writeTextFile(join(w.outside, `t${i}`, "x.txt"), `${MARK} ${i}\n`);
  }
  await w.write("d/f.txt", "inside\n");
  await Deno.writeTextFile(join(w.outside, "f.txt"), `${MARK} and a longer body than inside\n`);
  await Deno.writeTextFile(join(w.outside, "only_outside.txt"), `${MARK}\n`);
  await Deno.symlink(linkTarget, join(w.ws, ".d.link"));
}

/**
 * Runs `call(i)` TRIES times with the swapper on (LANES at a time), and on (at most TRIES more times, one by one)
 * until one call got through, so a tool that always fails cannot pass for a safe one; returns every run.
 */
async function underRace(w: Workspace, call: (i: number) => Promise<ToolRun>): Promise<ToolRun[]> {
  const swapper = await startSwapper(w.ws, "d", ".d.dir", ".d.link");
  const runs: ToolRun[] = [];
  try {
    let next = 0;
    const lane = async () => {
      while (next < TRIES) runs.push(await call(next++));
    };
    await Promise.all(Array.from({ length: LANES }, lane));
    for (let i = TRIES; i < 2 * TRIES && !runs.some((r) => r.code === 0); i++) {
      runs.push(await call(i % TRIES));
    }
  } finally {
    await swapper.stop();
  }
  return runs;
}

function assertNoLeak(tool: string, runs: ToolRun[], leaked: (run: ToolRun) => boolean): void {
  const bad = runs.filter(leaked);
  assert.deepEqual(bad.map((r) => r.stdout + r.stderr), [], `${tool} returned outside content`);
  // The race tests nothing if the tool never got through: some calls must have succeeded.
  assert.ok(runs.some((r) => r.code === 0), `${tool}: no call succeeded: ${runs[0].stderr}`);
}

for (
  const [tool, args] of [
    ["fs_read_file", { path: "d/f.txt" }],
    ["fs_read_lines", { path: "d/f.txt" }],
    ["fs_search", { pattern: "OUTSIDE|inside", regex: true }],
    ["fs_search", { pattern: "OUTSIDE|inside", regex: true, path: "d" }],
  ] as const
) {
  Deno.test(`race: ${tool} ${JSON.stringify(args)} never reads outside while a directory is swapped for a symlink`, async () => {
    await withWorkspace(async (w) => {
      await prepareDirectoryRace(w);
      const runs = await underRace(w, () => runTool(tool, args, { cwd: w.ws }));
      assertNoLeak(tool, runs, (run) => (run.stdout + run.stderr).includes(MARK));
    });
  });
}

Deno.test("race: fs_list_dir never lists outside while a directory is swapped for a symlink", async () => {
  await withWorkspace(async (w) => {
    await prepareDirectoryRace(w);
    const runs = await underRace(
      w,
      (i) =>
        runTool("fs_list_dir", i % 2 ? { path: "d" } : { recursive: true, max_depth: 5, max_entries: 5000 }, {
          cwd: w.ws,
        }),
    );
    assertNoLeak("fs_list_dir", runs, (run) => /only_outside|secret\.txt|inner\.txt/.test(run.stdout));
  });
});

Deno.test("race: fs_stat never describes an outside file while a directory is swapped for a symlink", async () => {
  await withWorkspace(async (w) => {
    await prepareDirectoryRace(w);
    const outsideSize = (await Deno.stat(join(w.outside, "f.txt"))).size;
    const runs = await underRace(w, () => runTool("fs_stat", { path: "d/f.txt" }, { cwd: w.ws }));
    assertNoLeak("fs_stat", runs, (run) => run.code === 0 && JSON.parse(run.stdout).size === outsideSize);
  });
});

Deno.test("race: fs_read_file never reads /etc while a directory is swapped for a symlink to /etc", async () => {
  await withWorkspace(async (w) => {
    await Deno.mkdir(join(w.ws, "d"));
    await w.write("d/hostname", "inside\n");
    await Deno.symlink("/etc", join(w.ws, ".d.link"));
    const hostname = (await Deno.readTextFile("/etc/hostname")).trim();
    assert.notEqual(hostname, "inside");
    const runs = await underRace(w, () => runTool("fs_read_file", { path: "d/hostname" }, { cwd: w.ws }));
    assertNoLeak(
      "fs_read_file",
      runs,
      (run) => run.code === 0 && JSON.parse(run.stdout).content !== "inside\n",
    );
  });
});

Deno.test("race: fs_read_file never reads outside while the file itself is swapped for a symlink", async () => {
  await withWorkspace(async (w) => {
    await w.write("d", "inside\n");
    await Deno.writeTextFile(join(w.outside, "f.txt"), `${MARK}\n`);
    await Deno.symlink("../outside/f.txt", join(w.ws, ".d.link"));
    const runs = await underRace(w, () => runTool("fs_read_file", { path: "d" }, { cwd: w.ws }));
    assertNoLeak("fs_read_file", runs, (run) => (run.stdout + run.stderr).includes(MARK));
  });
});

/** The writing tools, one distinct target per try so that every try could land outside on the old code. */
const WRITES: Array<[tool: string, args: (i: number) => Record<string, unknown>]> = [
  ["fs_write_file", (i) => ({ path: `d/new${i}.txt`, content: "pwned" })],
  ["fs_write_file", (i) => ({ path: `d/f${i}.txt`, content: "pwned" })],
  ["fs_write_file", (i) => ({ path: `d/p${i}/x.txt`, content: "pwned", create_parents: true })],
  ["fs_edit", (i) => ({ path: `d/f${i}.txt`, start_line: 1, new_string: "pwned" })],
  ["fs_mkdir", (i) => ({ path: `d/m${i}` })],
  ["fs_mkdir", (i) => ({ path: `d/q${i}/r`, parents: true })],
  ["fs_remove", (i) => ({ path: `d/f${i}.txt` })],
  ["fs_remove", (i) => ({ path: `d/t${i}`, recursive: true })],
];

for (const [tool, argsFor] of WRITES) {
  const shape = JSON.stringify(argsFor(0)).replaceAll("0", "N");
  Deno.test(`race: ${tool} ${shape} never changes the outside while a directory is swapped for a symlink`, async () => {
    await withWorkspace(async (w) => {
      await prepareDirectoryRace(w);
      const before = await contents(w.outside);
      const runs = await underRace(w, (i) => runTool(tool, argsFor(i), { cwd: w.ws }));
      assert.deepEqual(await contents(w.outside), before, `${tool} changed something outside the workspace`);
      assert.ok(runs.some((r) => r.code === 0), `${tool}: no call succeeded: ${runs[0].stderr}`);
    });
  });
}
