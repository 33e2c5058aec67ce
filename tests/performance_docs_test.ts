/**
 * docs/performance.md quotes only figures that `deno task bench` prints: every row of its figure tables names
 * the figure it quotes as `` `SECTION.KEY` ``, where SECTION is a bench of tests/bench/main.ts and KEY one of the
 * figures that bench returns (main.ts prints each as `KEY: VALUE` under `## SECTION`). The key is found in the
 * bench module's own text: an object key, a string, or a template literal whose holes match.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./support.ts";

const BENCH = join(REPO, "tests", "bench");
const PAGE = join(REPO, "docs", "performance.md");

/** The benches `deno task bench` runs: each section's name and the module of its function. */
function sections(): Map<string, string> {
  const main = Deno.readTextFileSync(join(BENCH, "main.ts"));
  const modules = new Map<string, string>();
  for (const [, fn, file] of main.matchAll(/import \{ (\w+) \} from "\.\/(\w+\.ts)";/g)) {
    modules.set(fn, file);
  }
  const found = new Map<string, string>();
  for (const [, name, fn] of main.matchAll(/\["(\w+)", (\w+)\]/g)) {
    const file = modules.get(fn);
    if (file !== undefined) found.set(name, Deno.readTextFileSync(join(BENCH, file)));
  }
  return found;
}

/**
 * The template literals of `source` that make a key (their text, holes aside, is word characters only, three at
 * least: `${name}_${sessions}_over_floor`), each as a pattern of a whole key (its holes match any word).
 */
function templates(source: string): RegExp[] {
  const patterns: RegExp[] = [];
  for (let i = source.indexOf("`"); i !== -1; i = source.indexOf("`", i + 1)) {
    // One literal, its `${...}` holes skipped with their braces balanced.
    let pattern = "";
    let text = "";
    let j = i + 1;
    for (; j < source.length && source[j] !== "`"; j++) {
      if (source[j] === "$" && source[j + 1] === "{") {
        let depth = 0;
        for (j++; j < source.length; j++) {
          if (source[j] === "{") depth++;
          else if (source[j] === "}" && --depth === 0) break;
        }
        pattern += "\\w+?";
      } else {
        text += source[j];
        pattern += source[j].replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      }
    }
    if (/^\w{3,}$/.test(text)) patterns.push(new RegExp(`^${pattern}$`));
    i = j;
  }
  return patterns;
}

/** Whether the bench `source` can print the figure `key`. */
export function printsKey(source: string, key: string): boolean {
  const literal = new RegExp(`(^|[\\s{,])${key}\\s*:|"${key}"|\\.${key}\\s*=[^=]`, "m");
  return literal.test(source) || templates(source).some((pattern) => pattern.test(key));
}

/** The figures the page quotes: each figure table row's `` `SECTION.KEY` ``, and the rows that quote none. */
function quoted(page: string): { keys: string[][]; bare: string[] } {
  const keys: string[][] = [];
  const bare: string[] = [];
  let inFigures = false;
  const lines = page.split("\n");
  const rule = (line: string | undefined) => line !== undefined && /^\|\s*-/.test(line);
  for (const [i, line] of lines.entries()) {
    if (line.startsWith("## ")) inFigures = /figures|memory/i.test(line);
    // A table's header is the row above its rule.
    if (!inFigures || !line.startsWith("|") || rule(line) || rule(lines[i + 1])) continue;
    const found = [...line.matchAll(/`(\w+)\.(\w+)`/g)].map(([, section, key]) => [section, key]);
    if (found.length === 0) bare.push(line);
    keys.push(...found);
  }
  return { keys, bare };
}

Deno.test("docs/performance.md: every figure it quotes is one a bench of `deno task bench` prints", () => {
  const benches = sections();
  const { keys, bare } = quoted(Deno.readTextFileSync(PAGE));
  assert.ok(keys.length >= 10, `the page quotes ${keys.length} figures`);
  assert.deepEqual(bare, [], "a figure row that names no bench figure");
  const missing = keys.filter(([section, key]) => {
    const source = benches.get(section);
    return source === undefined || !printsKey(source, key);
  }).map(([section, key]) => `${section}.${key}`);
  assert.deepEqual(missing, [], "figures no bench prints");
});

Deno.test("performance docs check: a key a bench prints is found, one it does not is not", () => {
  const source = [
    "const result = { confined_over_bare: 1, other: 2 };",
    "result.assigned_key = 5;",
    "if (result.compared_key === 1) {}",
    'result["quoted_key"] = 3;',
    "Object.assign(result, { [`${name}_${sessions}_over_floor`]: 4 });",
  ].join("\n");
  assert.equal(printsKey(source, "confined_over_bare"), true);
  assert.equal(printsKey(source, "quoted_key"), true);
  assert.equal(printsKey(source, "assigned_key"), true);
  assert.equal(printsKey(source, "compared_key"), false);
  assert.equal(printsKey(source, "confined_16_over_floor"), true);
  assert.equal(printsKey(source, "confined_16_over_ceiling"), false);
  assert.equal(printsKey(source, "made_up"), false);
});
