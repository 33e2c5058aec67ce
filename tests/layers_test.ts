// src/ is a house of layers, read from its folder names: imports run one way, front ends -> run -> policy and
// sandbox -> process -> manifest -> state -> base -> contract, and the core never imports the tool belt. This
// test guards that layout (issue 31). On the flat tree it replaced (98469b5) all five tests fail: some forty
// modules sat in src/ itself, in no layer, the core imported tools/lib, and trust.ts and trust_changes.ts
// imported each other. It reads every static, type-only and dynamic import of src/ and fails on an import against
// the direction, between two folders of the same rank, from the core into tools/, or on any import cycle.
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { REPO } from "./support.ts";

const SRC = join(REPO, "src");

/**
 * Each folder's rank: a module may import its own folder and any folder of a lower rank, never a folder of its
 * own rank or above. What each holds and why it sits where it does:
 * - contract (src/contract.ts and src/contract/): the tool ABI, what crosses the process boundary; the tools
 *   import it too. Imports nothing outside itself.
 * - base: leaf helpers with no toolgate layer (paths, text, the terminal, PATH lookup, env var names).
 * - state: toolgate's own files (state folders, private files, the secret store, redaction).
 * - manifest: what the tools are (reading, schemas, preflight, lint, trust, profiles, the belt's listing, the tool
 *   protocol a manifest declares). It reads state (caches, trust records), so it sits above it.
 * - process: one process from start to end (runner, process tree, envelope of a run, stop).
 * - hosts: what users bring, the MCP configurations of their hosts (Claude, Cursor, VS Code, Codex, ...): each
 *   host's reader and writer, the profile a server's entry calls for, the backup of a rewired file. It reads
 *   manifests' JSONC and converts servers as the manifest does, and keeps backups in state; a peer of process.
 * - policy, sandbox: whether a call runs, and how it is confined. Peers: neither imports the other.
 * - run: the one pipeline (executor, jobs, scheduler, audit records, store_secret).
 * - packages: package servers (npx, uvx, ...) installed at trust, confined through the launcher, and the entry a
 *   server runs from its install; the gateway and `trust` ask it. A peer of run: neither imports the other.
 * - launcher, ui: toolgate's own grants and start-up record; presentation shared by the front ends. Peers.
 * - front ends (commands, agent, mcp, pool, gateway, console, build, belt) and the entries (main, mod, launch).
 */
const RANK: Record<string, number> = {
  contract: 0,
  base: 1,
  state: 2,
  manifest: 3,
  process: 4,
  hosts: 4,
  policy: 5,
  sandbox: 5,
  run: 6,
  packages: 6,
  launcher: 7,
  ui: 7,
};
const FRONT_ENDS = ["commands", "agent", "mcp", "pool", "gateway", "console", "build", "belt"];
const FRONT = 8;
const ENTRIES = ["main.ts", "mod.ts", "launch.ts", "resident.ts"];

/**
 * Front-end modules that import nothing of toolgate but base and the contract, which a lower layer may read: the
 * agent's and the pool's addresses and limits are what the launcher grants toolgate itself.
 */
const LEAVES = ["agent/limits.ts", "pool/address.ts"];

/**
 * Imports against the direction that stand today, each with its reason. This list only shrinks: an import that
 * is not in it fails, and an entry that no longer matches an import fails too.
 */
const KNOWN: Record<string, string> = {};

/**
 * What src/ may import of tools/: the belt's listing reads tools.json and the launchers' flags (data), the
 * `__tool` mode loads a built-in tool's source on demand, and the bundle build bakes the tools' flags.
 */
const TOOLS_DOORS: Record<string, RegExp> = {
  "manifest/tool_belt.ts": /^tools\/deno_flags\.ts$|^tools\.json$/,
  "commands/tool_mode.ts": /^tools\/deno_flags\.ts$|^tools\/src\/[a-z_]+\.ts$/,
  "build/install.ts": /^tools\/deno_flags\.ts$/,
};

/** The bundle's entry of a built-in tool, `src/belt/NAME.ts`, imports that tool's source and nothing else. */
const BELT_ENTRY = /^src\/belt\/([a-z_]+)\.ts$/;

/** The folder (or entry) a module of src/ belongs to, and its rank. */
function layerOf(path: string): { layer: string; rank: number } {
  if (path === "contract.ts" || path.startsWith("contract/")) return { layer: "contract", rank: 0 };
  if (ENTRIES.includes(path)) return { layer: path, rank: FRONT + 1 };
  const folder = path.includes("/") ? path.slice(0, path.indexOf("/")) : "";
  if (folder in RANK) return { layer: folder, rank: RANK[folder] };
  if (FRONT_ENDS.includes(folder)) return { layer: folder, rank: FRONT };
  throw new Error(`src/${path} is in no layer: put it in a folder of tests/layers_test.ts's table`);
}

/**
 * Relative specifiers of the imports in `text`: static, `import type`, re-exports and dynamic `import("...")`;
 * with `types: false`, only the imports that load a module (`import type` and `export type` are erased).
 */
export function importsOf(text: string, { types = true } = {}): string[] {
  const found: string[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    // JSDoc examples and comments import too, but they are not the module's graph.
    if (trimmed.startsWith("*") || trimmed.startsWith("//") || trimmed.startsWith("/*")) continue;
    if (!types && /^(import|export) type\b/.test(trimmed)) continue;
    for (
      const match of line.matchAll(
        /\bfrom\s+["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/g,
      )
    ) {
      const specifier = match[1] ?? match[2] ?? match[3];
      if (specifier.startsWith(".")) found.push(specifier);
    }
  }
  return found;
}

async function modules(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await modules(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) found.push(path);
  }
  return found.sort();
}

/** Every import of src/, as repository-relative paths: `src/x/a.ts` -> `src/y/b.ts`. */
async function importGraph({ types = true } = {}): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const file of await modules(SRC)) {
    const from = relative(REPO, file);
    const targets = importsOf(await Deno.readTextFile(file), { types }).map((specifier) =>
      relative(REPO, join(file, "..", specifier))
    );
    graph.set(from, targets);
  }
  return graph;
}

Deno.test("layers: every import of src/ runs down the layers (front ends -> run -> policy, sandbox -> ... -> contract)", async () => {
  const graph = await importGraph();
  const problems: string[] = [];
  const used = new Set<string>();
  for (const [from, targets] of graph) {
    const inside = from.slice("src/".length);
    const own = layerOf(inside);
    for (const target of targets) {
      if (!target.startsWith("src/")) continue; // tools/ and the rest: the next test
      const other = target.slice("src/".length);
      const theirs = layerOf(other);
      const edge = `${inside} -> ${other}`;
      if (own.layer === theirs.layer) continue;
      if (own.layer === "contract") {
        problems.push(`${edge}: the contract imports nothing outside itself`);
        continue;
      }
      if (theirs.rank < own.rank) continue;
      if (own.rank === FRONT && theirs.rank === FRONT) continue; // front ends among themselves: not ranked yet
      if (LEAVES.includes(other)) continue;
      if (edge in KNOWN) {
        used.add(edge);
        continue;
      }
      problems.push(
        `${edge}: ${own.layer} (rank ${own.rank}) may not import ${theirs.layer} (rank ${theirs.rank})`,
      );
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual(
    Object.keys(KNOWN).filter((edge) => !used.has(edge)),
    [],
    "a known exception is gone: drop it",
  );
});

Deno.test("layers: the leaves a lower layer may read of a front end import only base and the contract", async () => {
  for (const leaf of LEAVES) {
    for (const specifier of importsOf(await Deno.readTextFile(join(SRC, leaf)))) {
      const target = relative(SRC, join(SRC, leaf, "..", specifier));
      assert.ok(["base", "contract"].includes(layerOf(target).layer), `${leaf} imports ${target}`);
    }
  }
});

Deno.test("layers: the core does not depend on the tool belt; src/ reads tools/ only through its three doors", async () => {
  const graph = await importGraph();
  const problems: string[] = [];
  for (const [from, targets] of graph) {
    for (const target of targets) {
      if (target.startsWith("src/") || target.startsWith("permissions/") || target === "deno.json") continue;
      const door = TOOLS_DOORS[from.slice("src/".length)];
      const entry = BELT_ENTRY.exec(from);
      if (entry !== null && target === `tools/src/${entry[1]}.ts`) continue;
      if (!door?.test(target)) problems.push(`${from} -> ${target}`);
    }
  }
  assert.deepEqual(problems, []);
  // What the executor and the job manager share with the tools is the contract's: tools/ re-exports it.
  for (
    const shim of ["lib/envelope.ts", "lib/args.ts", "lib/exec_args.ts", "lib/paths.ts", "schemas/job.ts"]
  ) {
    const specifiers = importsOf(await Deno.readTextFile(join(REPO, "tools", shim)));
    assert.ok(specifiers.every((s) => s.startsWith("../../src/contract/")), `tools/${shim}: ${specifiers}`);
  }
});

Deno.test("layers: no import cycle, between modules or between folders", async () => {
  // Between modules, over what loads at run time (a type-only import is erased: `job_owners.ts` names the
  // `Job` type of `jobs.ts`, which loads it). A depth-first walk that meets a module still on its path has
  // found a cycle.
  const graph = await importGraph({ types: false });
  const cycles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") cycles.push([...path.slice(path.indexOf(next)), next].join(" -> "));
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, "done");
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  assert.deepEqual(cycles, []);

  // Between folders, over every import, type-only ones too of the core (the known exceptions above are the only back edges, and they point out of it).
  const folders = new Map<string, Set<string>>();
  for (const [from, targets] of await importGraph()) {
    const own = layerOf(from.slice("src/".length));
    if (own.rank >= FRONT) continue;
    for (const target of targets.filter((t) => t.startsWith("src/"))) {
      const theirs = layerOf(target.slice("src/".length));
      if (theirs.rank >= FRONT || theirs.layer === own.layer) continue;
      if (!folders.has(own.layer)) folders.set(own.layer, new Set());
      folders.get(own.layer)!.add(theirs.layer);
    }
  }
  const reaches = (from: string, to: string, seen = new Set<string>()): boolean =>
    [...folders.get(from) ?? []].some((next) =>
      next === to || (!seen.has(next) && (seen.add(next), reaches(next, to, seen)))
    );
  const folderCycles = [...folders.keys()].filter((folder) => reaches(folder, folder));
  assert.deepEqual(folderCycles, []);
});

Deno.test("layers: the walk sees every kind of import, and the table ranks every folder of src/", async () => {
  const text = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b.ts";',
    'export { c } from "./c.ts";',
    'const d = await import("./d.ts");',
    'import "./e.ts";',
    ' * import { example } from "./not_a_dependency.ts";',
    'import { x } from "npm:x";',
  ].join("\n");
  assert.deepEqual(importsOf(text), ["./a.ts", "../b.ts", "./c.ts", "./d.ts", "./e.ts"]);
  assert.deepEqual(importsOf(text, { types: false }), ["./a.ts", "./c.ts", "./d.ts", "./e.ts"]);
  for await (const entry of Deno.readDir(SRC)) {
    const path = entry.isDirectory ? `${entry.name}/x.ts` : entry.name;
    layerOf(path); // throws for a folder or a top-level module the table does not rank
  }
  // A rule that names a folder that is gone checks nothing: every ranked folder exists.
  for (const folder of [...Object.keys(RANK).filter((f) => f !== "contract"), ...FRONT_ENDS]) {
    assert.ok((await Deno.stat(join(SRC, folder))).isDirectory, folder);
  }
});

/** How long a module may grow before its own doc must say why it is one piece. */
const LONG_MODULE = 400;

/**
 * Why a module is one piece, as its module doc (the JSDoc that ends in `@module`) says it: the paragraph that
 * begins `One piece:`, or undefined where it has none. The reason lives in the module, beside the code it speaks
 * for, so that whoever edits the module reads it and whoever splits it removes it.
 */
export function onePieceReason(text: string): string | undefined {
  const end = text.indexOf("@module");
  if (end < 0) return undefined;
  const start = text.lastIndexOf("/**", end);
  if (start < 0) return undefined;
  const lines = text.slice(start + 3, end).split("\n").map((line) => line.replace(/^\s*\*\s?/, "").trim());
  const first = lines.findIndex((line) => line.startsWith("One piece:"));
  if (first < 0) return undefined;
  const rest = lines.slice(first + 1);
  const blank = rest.indexOf("");
  const paragraph = [lines[first], ...(blank < 0 ? rest : rest.slice(0, blank))];
  const reason = paragraph.join(" ").slice("One piece:".length).trim();
  return reason === "" ? undefined : reason;
}

Deno.test("layers: no module over 400 lines but those whose module doc says why it is one piece", async () => {
  const long: string[] = [];
  for (const file of await modules(SRC)) {
    const text = await Deno.readTextFile(file);
    const lines = text.split("\n").length - 1;
    if (lines > LONG_MODULE && onePieceReason(text) === undefined) {
      long.push(`src/${relative(SRC, file)}: ${lines} lines and no "One piece:" paragraph in its module doc`);
    }
  }
  assert.deepEqual(long, []);
});

Deno.test("layers: the one-piece reason is read from the module doc's paragraph, and only from there", () => {
  const doc = (body: string) => `/**\n * What it does.\n *\n${body} * @module\n */\nexport const x = 1;\n`;
  assert.equal(
    onePieceReason(doc(" * One piece: a state machine\n * over pipes.\n *\n")),
    "a state machine over pipes.",
  );
  assert.equal(onePieceReason(doc(" * One piece: last paragraph.\n")), "last paragraph.");
  assert.equal(onePieceReason(doc("")), undefined);
  assert.equal(onePieceReason(doc(" * One piece:\n *\n")), undefined, "a reason, not just the words");
  assert.equal(onePieceReason("// One piece: not in a module doc\nexport const x = 1;\n"), undefined);
  assert.equal(
    onePieceReason(doc("") + "/** One piece: an export's doc, not the module's. */\nexport const y = 2;\n"),
    undefined,
  );
});

Deno.test("layers: every folder of src/ has a README saying what it holds and what it may import", async () => {
  const missing: string[] = [];
  for await (const entry of Deno.readDir(SRC)) {
    if (!entry.isDirectory) continue;
    let text = "";
    try {
      text = await Deno.readTextFile(join(SRC, entry.name, "README.md"));
    } catch {
      missing.push(`src/${entry.name}/README.md: missing`);
      continue;
    }
    if (!text.startsWith(`# src/${entry.name}/\n`)) missing.push(`src/${entry.name}/README.md: no title`);
    if (!/\bimports?\b/i.test(text)) missing.push(`src/${entry.name}/README.md: says nothing of its imports`);
  }
  assert.deepEqual(missing, []);
});

Deno.test("layers: only sandbox/tool_launch.ts builds the seccomp filter or hands it to bwrap (house rule 4)", async () => {
  const owned = [
    "src/sandbox/seccomp_filter.ts",
    "src/sandbox/seccomp_file.ts",
    "src/sandbox/syscall_tables.ts",
  ];
  const strays: string[] = [];
  for (const [from, targets] of await importGraph()) {
    // The sandbox probe (sandbox.ts) tries the filter once, on bwrap's stdin, so that the mode knows ahead.
    if (from === "src/sandbox/tool_launch.ts" || from === "src/sandbox/sandbox.ts" || owned.includes(from)) {
      continue;
    }
    for (const target of targets) if (owned.includes(target)) strays.push(`${from} -> ${target}`);
  }
  assert.deepEqual(strays, []);
});
