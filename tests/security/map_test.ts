// tests/security/README.md maps each attack to the test that shows it fails. This test holds the map to the
// tests: every row names a test file that exists and a test that file declares, and no attack is listed twice
// (a merge once doubled the whole table, and a renamed test left rows pointing at nothing).
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";

const MAP = join(REPO, "tests", "security", "README.md");

/** One citation of a row: a test file, and the name of a test (or step) it declares. */
interface Cited {
  file: string;
  name: string;
}

/** A row of the table: its attack, the citations of its test cell, and what in that cell does not read as one. */
interface Row {
  attack: string;
  cited: Cited[];
  problem?: string;
}

/** The table's rows: the attack, and each `file`: `test name` pair its test column cites. */
function rows(text: string): Row[] {
  return text.split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| Attack") && !/^\|[\s|-]+\|?$/.test(line))
    .map((line) => {
      const cells = line.split(/(?<!\\)\|/).map((cell) => cell.trim());
      const attack = cells[1];
      if (cells.length !== 4) return { attack, cited: [], problem: `${cells.length - 2} cells, not 2` };
      return { attack, ...citations(cells[2]) };
    });
}

/**
 * Reads a test cell, which must be citations and nothing else, separated by `; `: each a `` `tests/….ts` `` file,
 * `: `, then one or more backquoted test names separated by `, ` (a name that holds a backquote between double
 * backquotes), each name maybe followed by a note in parentheses. Anything else (a backquote left open, a file
 * without a name, a name without its file, text between the citations) is a problem: the reader would skip it,
 * and a row could cite nothing that exists while the check passes.
 */
function citations(cell: string): { cited: Cited[]; problem?: string } {
  const cited: Cited[] = [];
  let at = 0;
  const fail = (what: string) => ({ cited, problem: `${what} at "${cell.slice(at, at + 60)}"` });
  /** The code span at `at` (its text), moving past it; undefined when none is there or it is left open. */
  const span = (): string | undefined => {
    const fence = cell.startsWith("``", at) ? "``" : cell.startsWith("`", at) ? "`" : undefined;
    if (fence === undefined) return undefined;
    const end = cell.indexOf(fence, at + fence.length);
    if (end === -1 || end === at + fence.length) return undefined;
    const text = cell.slice(at + fence.length, end);
    at = end + fence.length;
    return fence === "``" && text.startsWith(" ") && text.endsWith(" ") ? text.slice(1, -1) : text;
  };
  /** A note in parentheses at `at`, code spans in it read whole; false when its parentheses do not close. */
  const note = (): boolean => {
    let depth = 0;
    do {
      if (cell[at] === "`") {
        if (span() === undefined) return false;
        continue;
      }
      if (cell[at] === "(") depth++;
      else if (cell[at] === ")") depth--;
      at++;
    } while (depth > 0 && at < cell.length);
    return depth === 0;
  };
  while (true) {
    const file = span();
    if (file === undefined || !/^tests\/\S+\.ts$/.test(file)) return fail("no `tests/….ts` file");
    if (!cell.startsWith(": ", at)) return fail(`${file} cites no test name`);
    at += 2;
    do {
      const name = span();
      if (name === undefined) return fail("no backquoted test name, or one left open");
      cited.push({ file, name });
      if (cell.startsWith(" (", at)) {
        at++;
        if (!note()) return fail("a note whose parentheses or backquotes do not close");
      }
    } while (cell.startsWith(", ", at) && (at += 2));
    if (at === cell.length) return { cited };
    if (!cell.startsWith("; ", at)) return fail("text that is no citation");
    at += 2;
  }
}

/**
 * The test names a file builds from template literals (`Deno.test(`, `confinedTest(`, `t.step(` ... followed by
 * a backquoted string holding `${...}`, or `modeTest(sandbox, ` and one), each as a pattern where a `${...}` stands for any text. A template
 * with fewer than 20 literal characters would match nearly any name, so it is left out.
 */
function templateNames(source: string): RegExp[] {
  return [...source.matchAll(/(?:[tT]est|step)\(\s*(?:\w+,\s*)?`([^`]*\$\{[^`]*)`/g)]
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
  for (const { attack, cited, problem } of table) {
    if (seen.has(attack)) problems.push(`listed twice: ${attack.slice(0, 80)}`);
    seen.add(attack);
    if (problem !== undefined) {
      problems.push(`a test cell that does not read: ${problem} (${attack.slice(0, 60)})`);
    } else if (cited.length === 0) problems.push(`no test cited: ${attack.slice(0, 80)}`);
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
      if (!named) {
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

Deno.test("security map: a test cell the reader cannot account for is a problem, not a row that cites less", () => {
  const cell = (tests: string) => rows(`| An attack | ${tests} |`)[0];
  const name = "race: fs_edit never changes the outside";
  // The row as it once stood: backquotes shifted by one, so that a name lost its start and free text held the rest.
  const garbled = cell(
    "`tests/tools/race_test.ts`: ace: fs_write_file never changes the outside`(and the other shapes);" +
      `\`tests/tools/race_test.ts\`:\`${name}\``,
  );
  assert.match(garbled.problem ?? "", /no backquoted test name/);
  const broken: [string, RegExp][] = [
    [`\`tests/a_test.ts\`: \`${name}`, /left open/],
    ["`tests/a_test.ts` (a note)", /cites no test name/],
    [`\`${name}\``, /no `tests\/….ts` file/],
    [`\`tests/a_test.ts\`: \`a\` and \`b\``, /text that is no citation/],
    [
      `\`tests/a_test.ts\`: \`a\` (a note; \`tests/b_test.ts\`: \`b\``,
      /parentheses or backquotes do not close/,
    ],
    [`\`tests/a_test.ts\`: \`a\`;\`tests/b_test.ts\`: \`b\``, /text that is no citation/],
    ["`tests/a_test.ts`: `a` | `tests/b_test.ts`: `b`", /3 cells, not 2/],
  ];
  for (const [tests, problem] of broken) assert.match(cell(tests).problem ?? "", problem, tests);
  // What the table does write reads whole: several names of one file, notes (with code in them), a name holding a
  // backquote between double backquotes.
  assert.deepEqual(
    cell(
      "`tests/a_test.ts`: `a: one` (and `run`, `serve`), `a: two`; `tests/b_test.ts`: ``b: `call` refuses`` (lint)",
    ),
    {
      attack: "An attack",
      cited: [
        { file: "tests/a_test.ts", name: "a: one" },
        { file: "tests/a_test.ts", name: "a: two" },
        { file: "tests/b_test.ts", name: "b: `call` refuses" },
      ],
    },
  );
});
