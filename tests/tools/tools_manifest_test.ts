/**
 * The built-in tools' entries in tools.json and their launchers: strict schemas, one-sentence verb-led
 * descriptions, the right flags and permission profiles, and least-privilege Deno flags in one visible place.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";
import { launcherText, TOOL_DENO_FLAGS } from "../../tools/deno_flags.ts";
import { TOOL_ARGS } from "../../tools/schemas/mod.ts";
import { withDeclaredSchemas } from "../../tools/tools_json.ts";

interface Entry {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  command: string[];
  readOnly?: boolean;
  concurrent?: boolean;
  permissions?: string;
  envPassthrough?: string[];
}

const manifest: { tools: Entry[] } = JSON.parse(await Deno.readTextFile(join(REPO, "tools.json")));
const byName = new Map(manifest.tools.map((t) => [t.name, t]));

/**
 * The file tools' own confinement (tools/lib/workspace.ts) needs Deno to pass relative paths and open flags to the
 * kernel unchanged, which it does only with every permission granted: scoped --allow-read/--allow-write make every
 * path absolute and open the canonicalized path, which reopens the check-then-open race (issue 10, item 5).
 */
const FILE_TOOL_FLAGS = "--allow-all";

/** name -> [readOnly, concurrent, permissions profile, the exact Deno permission flags of its launcher]. */
const EXPECTED: Record<string, [boolean, boolean, string, string]> = {
  get_time: [true, true, "none", ""],
  fs_read_file: [true, true, "none", FILE_TOOL_FLAGS],
  fs_read_lines: [true, true, "none", FILE_TOOL_FLAGS],
  fs_list_dir: [true, true, "none", FILE_TOOL_FLAGS],
  fs_search: [true, true, "none", FILE_TOOL_FLAGS],
  fs_stat: [true, true, "none", FILE_TOOL_FLAGS],
  fs_write_file: [false, false, "workspace", FILE_TOOL_FLAGS],
  fs_edit: [false, false, "workspace", FILE_TOOL_FLAGS],
  fs_mkdir: [false, false, "workspace", FILE_TOOL_FLAGS],
  fs_remove: [false, false, "workspace", FILE_TOOL_FLAGS],
  http_fetch: [true, true, "network", "--allow-net --allow-env=TOOLGATE_FETCH_ALLOW_HOSTS"],
  // exec reads its whole environment: a bound credential's placeholder is in a variable the manifest names (and
  // --allow-run could print the environment anyway); it passes on PATH, HOME and the sandbox's way out only.
  exec: [false, false, "workspace", "--allow-run --allow-read=. --allow-env"],
  // Answered inside toolgate (src/run/jobs.ts); poll and wait are read-only calls, kill is not (src/policy/policy.ts).
  job: [false, false, "none", ""],
};

/** Every object schema under `schema`, with where it is. */
function objectSchemas(schema: unknown, where: string): Array<[string, Record<string, unknown>]> {
  if (typeof schema !== "object" || schema === null) return [];
  const node = schema as Record<string, unknown>;
  const found: Array<[string, Record<string, unknown>]> = node.type === "object" ? [[where, node]] : [];
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, unknown>)) {
    found.push(...objectSchemas(child, `${where}.${name}`));
  }
  if (node.items !== undefined) found.push(...objectSchemas(node.items, `${where}[]`));
  return found;
}

Deno.test("tools.json: every built-in tool is declared with the expected flags and profile", () => {
  assert.deepEqual([...byName.keys()].sort(), Object.keys(EXPECTED).sort());
  for (const [name, [readOnly, concurrent, profile]] of Object.entries(EXPECTED)) {
    const entry = byName.get(name)!;
    assert.equal(entry.readOnly ?? false, readOnly, `${name}.readOnly`);
    assert.equal(entry.concurrent ?? false, concurrent, `${name}.concurrent`);
    assert.equal(entry.permissions, profile, `${name}.permissions`);
    assert.deepEqual(entry.command, [`./tools/bin/${name}`]);
  }
  assert.deepEqual(byName.get("http_fetch")!.envPassthrough, ["TOOLGATE_FETCH_ALLOW_HOSTS"]);
});

const STALE =
  "tools.json differs from the schemas in tools/schemas/: run `deno task tools-json` and commit tools.json";

Deno.test("tools.json: each built-in tool's schema is the one its tool reads by (tools/schemas/)", async () => {
  const committed = await Deno.readTextFile(join(REPO, "tools.json"));
  assert.ok(withDeclaredSchemas(committed) === committed, STALE);
  assert.deepEqual(Object.keys(TOOL_ARGS).sort(), Object.keys(EXPECTED).sort());
  // A schema edited in tools.json alone is put back: the check above sees any drift.
  const drifted = committed.replace('"default": 262144', '"default": 4096');
  assert.notEqual(drifted, committed);
  assert.equal(withDeclaredSchemas(drifted), committed);
});

Deno.test("tools.json: schemas are strict at every object level, with defaults for every optional field", () => {
  for (const entry of manifest.tools) {
    for (const [where, node] of objectSchemas(entry.schema, entry.name)) {
      assert.equal(node.additionalProperties, false, `${where}: additionalProperties must be false`);
      const required = new Set((node.required ?? []) as string[]);
      for (
        const [field, property] of Object.entries(
          (node.properties ?? {}) as Record<string, Record<string, unknown>>,
        )
      ) {
        if (!required.has(field) && !where.includes("[]")) {
          assert.ok("default" in property, `${where}.${field}: an optional field declares its default`);
        }
        if (Array.isArray(property.enum) && "default" in property) {
          assert.ok(
            property.enum.includes(property.default),
            `${where}.${field}: the default is one of the enum`,
          );
        }
      }
    }
  }
});

Deno.test("tools.json: descriptions are one sentence starting with a verb, without usage advice", () => {
  for (const entry of manifest.tools) {
    const text = entry.description;
    assert.match(text, /^[A-Z][a-z]+ /, `${entry.name}: starts with a capitalized verb`);
    assert.ok(text.endsWith(".") && !text.slice(0, -1).includes(". "), `${entry.name}: one sentence`);
    assert.doesNotMatch(text, /use (this )?when/i, `${entry.name}: no usage advice`);
  }
});

Deno.test("launchers: executable sh scripts carrying exactly the least-privilege flags", async () => {
  for (const [name, [, , , flags]] of Object.entries(EXPECTED)) {
    const path = join(REPO, "tools/bin", name);
    const info = await Deno.stat(path);
    assert.ok((info.mode ?? 0) & 0o111, `${name} is executable`);
    const script = await Deno.readTextFile(path);
    assert.ok(script.startsWith("#!/bin/sh\n"), name);
    const line = script.split("\n").find((l) => l.startsWith("exec deno run "));
    assert.ok(line, `${name}: one exec deno run line`);
    const expected = `exec deno run --quiet --no-prompt --no-config --no-lock ${flags ? flags + " " : ""}` +
      `"$(dirname -- "$0")/../src/${name}.ts"`;
    assert.equal(line, expected);
    // Only the file tools run with every permission, and each launcher says why in its comment.
    if (flags === FILE_TOOL_FLAGS) assert.match(script, /# .*O_NOFOLLOW/, name);
    else assert.doesNotMatch(script, /--allow-all|\s-A\s/, name);
    // The launcher is generated from the one declaration toolgate itself starts the tool with.
    assert.equal(script, launcherText(name), `${name}: regenerate the launcher from tools/deno_flags.ts`);
  }
  assert.deepEqual(Object.keys(TOOL_DENO_FLAGS).sort(), Object.keys(EXPECTED).sort());
});

Deno.test("tool sources: nothing from src/ but the contract, no npm or remote packages", async () => {
  // What each folder may import of its own: a tool its library and its argument schema, a schema the types.
  const LOCAL: Record<string, string[]> = {
    "tools/src": ["../lib/", "../schemas/"],
    "tools/lib": ["./"],
    "tools/schemas": ["./", "../lib/"],
  };
  for (const [dir, prefixes] of Object.entries(LOCAL)) {
    for await (const entry of Deno.readDir(join(REPO, dir))) {
      const text = await Deno.readTextFile(join(REPO, dir, entry.name));
      for (const match of text.matchAll(/\bfrom\s+"([^"]+)"|\bimport\s*\(\s*"([^"]+)"/g)) {
        const specifier = match[1] ?? match[2];
        const local = prefixes.some((prefix) => specifier.startsWith(prefix));
        // The contract module imports nothing outside itself, so a tool that uses it stays a self-contained
        // program. What the core shares with the tools (the failure type, the argument reader, exec's argument
        // rules, path rules, the job tool's arguments) lives in src/contract/; tools/lib and tools/schemas
        // re-export it from there.
        const contract = (dir === "tools/lib" && specifier === "../../src/contract.ts") ||
          (dir !== "tools/src" && /^\.\.\/\.\.\/src\/contract\/[a-z0-9_]+\.ts$/.test(specifier));
        assert.ok(
          specifier.startsWith("node:") || local || contract,
          `${dir}/${entry.name} imports ${specifier}`,
        );
      }
    }
  }
});

Deno.test("launchers: why the file tools take every permission (scoped flags reopen the race in Deno)", async () => {
  // If this starts failing, Deno passes relative paths and O_NOFOLLOW through under scoped flags too, and the file
  // tools' launchers can go back to --allow-read=. / --allow-write=.
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(join(dir, "ws"));
    await Deno.writeTextFile(join(dir, "outside.txt"), "outside\n");
    await Deno.symlink("../outside.txt", join(dir, "ws", "link"));
    const probe = join(dir, "probe.ts");
    await Deno.writeTextFile(
      probe,
      `import * as fs from "node:fs";
      const { O_RDONLY, O_NOFOLLOW } = fs.constants;
      try { fs.openSync("link", O_RDONLY | O_NOFOLLOW); console.log("followed"); } catch (e) { console.log(e.code); }`,
    );
    const run = (flags: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "--no-prompt", "--no-config", "--no-lock", ...flags, probe],
        cwd: join(dir, "ws"),
        stdout: "piped",
        stderr: "piped",
      }).output().then((out) => new TextDecoder().decode(out.stdout).trim());
    assert.equal(await run(["--allow-all"]), "ELOOP", "every permission: the flag reaches the kernel");
    assert.equal(
      await run([`--allow-read=${join(dir, "ws")},${probe}`]),
      "followed",
      "scoped: Deno canonicalizes and opens the target",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
