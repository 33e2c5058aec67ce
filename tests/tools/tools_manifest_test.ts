/**
 * The built-in tools' entries in tools.json and their launchers: strict schemas, one-sentence verb-led
 * descriptions, the right flags and permission profiles, and least-privilege Deno flags in one visible place.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./helpers.ts";
import { launcherText, TOOL_DENO_FLAGS } from "../../tools/deno_flags.ts";

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

/** The file tools read the workspace, and learn the control plane they must leave alone. */
const READ = "--allow-read=. --allow-env=TOOLGATE_PROTECTED";
const WRITE = "--allow-read=. --allow-write=. --allow-env=TOOLGATE_PROTECTED";

/** name -> [readOnly, concurrent, permissions profile, the exact Deno permission flags of its launcher]. */
const EXPECTED: Record<string, [boolean, boolean, string, string]> = {
  get_time: [true, true, "none", ""],
  fs_read_file: [true, true, "none", READ],
  fs_read_lines: [true, true, "none", READ],
  fs_list_dir: [true, true, "none", READ],
  fs_search: [true, true, "none", READ],
  fs_stat: [true, true, "none", READ],
  fs_write_file: [false, false, "workspace", WRITE],
  fs_edit: [false, false, "workspace", WRITE],
  fs_mkdir: [false, false, "workspace", WRITE],
  fs_remove: [false, false, "workspace", WRITE],
  http_fetch: [true, true, "network", "--allow-net --allow-env=TOOLGATE_FETCH_ALLOW_HOSTS"],
  exec: [false, false, "workspace", "--allow-run --allow-read=. --allow-env=PATH,HOME,TOOLGATE_PROTECTED"],
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
    assert.doesNotMatch(script, /--allow-all|\s-A\s/, name);
    // The launcher is generated from the one declaration toolgate itself starts the tool with.
    assert.equal(script, launcherText(name), `${name}: regenerate the launcher from tools/deno_flags.ts`);
  }
  assert.deepEqual(Object.keys(TOOL_DENO_FLAGS).sort(), Object.keys(EXPECTED).sort());
});

Deno.test("tool sources: nothing from src/ but the contract, no npm or remote packages", async () => {
  for (const dir of ["tools/src", "tools/lib"]) {
    for await (const entry of Deno.readDir(join(REPO, dir))) {
      const text = await Deno.readTextFile(join(REPO, dir, entry.name));
      for (const match of text.matchAll(/\bfrom\s+"([^"]+)"|\bimport\s*\(\s*"([^"]+)"/g)) {
        const specifier = match[1] ?? match[2];
        const local = dir === "tools/lib" ? specifier.startsWith("./") : specifier.startsWith("../lib/");
        // The contract module imports nothing, so a tool that uses it stays a self-contained program.
        const contract = dir === "tools/lib" && specifier === "../../src/contract.ts";
        assert.ok(
          specifier.startsWith("node:") || local || contract,
          `${dir}/${entry.name} imports ${specifier}`,
        );
      }
    }
  }
});
