// tests/security/README.md maps each attack to the test that shows it fails. This test holds the map to the
// tests: every row names a test file that exists and a test that file declares, and no attack is listed twice
// (a merge once doubled the whole table, and a renamed test left rows pointing at nothing).
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";

const MAP = join(REPO, "tests", "security", "README.md");

/** The table's rows: the attack, and each `file`: `test name` pair its test column cites. */
function rows(text: string): { attack: string; cited: { file: string; name: string }[] }[] {
  return text.split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| Attack") && !/^\|[\s|-]+\|?$/.test(line))
    .map((line) => {
      const [, attack, tests] = line.split(/(?<!\\)\|/).map((cell) => cell.trim());
      const cited = [...(tests ?? "").matchAll(/`(tests\/[^`]+\.ts)`(?::\s*`([^`]+)`)?/g)]
        .map(([, file, name]) => ({ file, name: name ?? "" }));
      return { attack, cited };
    });
}

/**
 * The test names a file builds from template literals (`Deno.test(`, `confinedTest(`, `t.step(` ... followed by
 * a backquoted string holding `${...}`), each as a pattern where a `${...}` stands for any text. A template
 * with fewer than 20 literal characters would match nearly any name, so it is left out.
 */
function templateNames(source: string): RegExp[] {
  return [...source.matchAll(/(?:[tT]est|step)\(\s*`([^`]*\$\{[^`]*)`/g)]
    .map(([, template]) => template.split(/\$\{[^}]*\}/))
    .filter((parts) => parts.join("").length >= 20)
    .map((parts) =>
      new RegExp(`^${parts.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)
    );
}

Deno.test("security map: each attack once, each citing a test file that exists and a test it declares", async () => {
  const table = rows(await Deno.readTextFile(MAP));
  assert.ok(table.length > 50, `the table was not read: ${table.length} rows`);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { attack, cited } of table) {
    if (seen.has(attack)) problems.push(`listed twice: ${attack.slice(0, 80)}`);
    seen.add(attack);
    if (cited.length === 0) problems.push(`no test cited: ${attack.slice(0, 80)}`);
    for (const { file, name } of cited) {
      let source: string;
      try {
        source = await Deno.readTextFile(join(REPO, file));
      } catch {
        problems.push(`${file}: no such file (${attack.slice(0, 60)})`);
        continue;
      }
      // A name is cited whole, or by its first 40 characters; a test a loop names from a template literal is
      // cited as one of the names it expands to (`jobs (sandbox require): ...` for `jobs (sandbox ${sandbox}): ...`).
      const words = name.replaceAll("\\|", "|");
      const named = source.includes(words) || source.includes(words.slice(0, 40)) ||
        templateNames(source).some((template) => template.test(words));
      if (words !== "" && !named) {
        problems.push(`${file}: no test named "${words.slice(0, 80)}"`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("security map: the reader finds a row's citations, and a loop's test name by its template", () => {
  const sample = [
    "| Attack | Test |",
    "| --- | --- |",
    "| A tool writes outside | `tests/security/a_test.ts`: `a: refused`; `tests/b_test.ts`: `b` |",
  ].join("\n");
  assert.deepEqual(rows(sample), [{
    attack: "A tool writes outside",
    cited: [{ file: "tests/security/a_test.ts", name: "a: refused" }, { file: "tests/b_test.ts", name: "b" }],
  }]);
  const [loop] = templateNames("for (const m of M) Deno.test(`jobs (sandbox ${m}): the log is capped`, f);");
  assert.ok(loop.test("jobs (sandbox off): the log is capped"));
  assert.ok(!loop.test("jobs (sandbox off): the log is not capped"));
  assert.deepEqual(
    templateNames("Deno.test(`${a}: ${b}`, f);"),
    [],
    "a template of little text matches nothing",
  );
});
