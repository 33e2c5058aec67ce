/**
 * Holds that the examples in `src/` prove what they show: an `@example` that states a result asserts it
 * (`assert.equal(seconds(2_500), "2.5 s")`), never leaves it in a comment (`seconds(2_500); // "2.5 s"`),
 * which `deno test --doc` runs without checking and which went wrong unseen (`backoffMs`'s `// true`).
 *
 * Not here: running the examples, which `deno test --doc src/` does.
 * @module
 */

import assert from "node:assert/strict";

/** The folders of `src/` (and `*.ts`, its top-level modules) whose examples are held: every one of them. */
const DONE = [
  "base",
  "contract",
  "state",
  "manifest",
  "policy",
  "run",
  "packages",
  "hosts",
  "agent",
  "pool",
  "console",
  "launcher",
  "build",
  "belt",
  "ui",
  "*.ts",
  "commands",
  "process",
  "gateway",
  "mcp",
  "sandbox",
];

/** One `@example` code block: where it starts and its lines with the JSDoc `*` margin taken off. */
interface ExampleBlock {
  readonly file: string;
  readonly line: number;
  readonly ignored: boolean;
  /** The text after `@example`, where a reason for `ignore` may stand. */
  readonly title: string;
  readonly body: readonly string[];
}

/** Every fenced code block under an `@example` tag of a module's doc comments. */
function exampleBlocks(file: string, text: string): ExampleBlock[] {
  const lines = text.split("\n");
  const blocks: ExampleBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!/^\s*\*\s*@example\b/.test(lines[index])) continue;
    let fence = index + 1;
    while (fence < lines.length && !/^\s*\*\s*```/.test(lines[fence]) && !/^\s*\*\//.test(lines[fence])) {
      fence++;
    }
    if (fence >= lines.length || !/^\s*\*\s*```/.test(lines[fence])) continue;
    let end = fence + 1;
    while (end < lines.length && !/^\s*\*\s*```\s*$/.test(lines[end])) end++;
    blocks.push({
      file,
      line: fence + 1,
      ignored: /\bignore\b/.test(lines[fence]),
      title: lines[index].replace(/^\s*\*\s*@example\s*/, ""),
      body: lines.slice(fence + 1, end).map((line) => line.replace(/^\s*\* ?/, "")),
    });
    index = end;
  }
  return blocks;
}

/** A comment that reads as a value: a literal, a quoted string, a number, true/false, an array or an object. */
const RESULT =
  /^\s*(=>\s*)?(true|false|undefined|null|NaN|-?\d[\d_.]*\b|"|'|`|\[|\{|(Set|Map|Uint8Array) ?[{([]|e\.g\. )/;

/** The comment of a line of code, found outside its strings, or undefined. */
function trailingComment(line: string): { code: string; comment: string } | undefined {
  let quote: string | undefined;
  for (let index = 0; index < line.length; index++) {
    const char = line[index];
    if (quote !== undefined) {
      if (char === "\\") index++;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'" || char === "`") quote = char;
    else if (line.startsWith("//", index) && (index === 0 || /[\s;)]/.test(line[index - 1]))) {
      return { code: line.slice(0, index), comment: line.slice(index + 2) };
    }
  }
  return undefined;
}

/** The lines of an example whose result is a comment: `expr; // value`, or a `// value` line under code. */
function resultComments(block: ExampleBlock): string[] {
  const found: string[] = [];
  let previousCode = false;
  for (const line of block.body) {
    const split = trailingComment(line);
    const code = split === undefined ? line.trim() : split.code.trim();
    const isCode = code !== "" && !code.startsWith("import ");
    if (split !== undefined && RESULT.test(split.comment)) {
      if (isCode && !/^(await\s+)?assert\b/.test(code)) found.push(line.trim());
      else if (!isCode && previousCode) found.push(line.trim());
    }
    previousCode = isCode || (previousCode && code === "" && split !== undefined);
  }
  return found;
}

/** A comment that reads as code: a declaration, an `await`, or a call ending in `;`. */
const CODE_COMMENT =
  /^\s*\/\/\s*((const|let|var|await|if|for|import)\s|(new\s+)?[\w$.]+(\[[^\]]*\])?\(.*\)([^;]*;|\s*(->.*)?$))/;

/**
 * The lines of an example that are code commented out (the example shows what it cannot run), or its imports when
 * it does nothing else.
 */
function commentedOutCode(block: ExampleBlock): string[] {
  const commented = block.body.filter((line) => CODE_COMMENT.test(line)).map((line) => line.trim());
  const code = block.body.map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("//"));
  const importsOnly = code.length > 0 && code.every((line) => /^import\s/.test(line));
  return importsOnly ? [...commented, `${code.join(" ")} (and nothing else)`] : commented;
}

/** The folder of `src/` a module belongs to, `*.ts` for the top-level ones. */
function folderOf(file: string): string {
  const parts = file.split("/");
  return parts.length > 2 ? parts[1] : "*.ts";
}

async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await sourceFiles(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) files.push(path);
  }
  return files.sort();
}

async function allBlocks(): Promise<ExampleBlock[]> {
  const blocks: ExampleBlock[] = [];
  for (const file of await sourceFiles("src")) {
    blocks.push(...exampleBlocks(file, await Deno.readTextFile(file)));
  }
  return blocks;
}

Deno.test("examples: the scan finds a result left in a comment and passes one asserted", () => {
  const doc = (body: string) => `/**\n * @example\n * \`\`\`ts\n${body}\n * \`\`\`\n */\n`;
  const scan = (body: string) => exampleBlocks("src/x/y.ts", doc(body)).flatMap(resultComments);
  assert.deepEqual(scan(' * import { b } from "./b.ts";\n * backoffMs(1, () => 0.999) < 1000; // true'), [
    "backoffMs(1, () => 0.999) < 1000; // true",
  ]);
  assert.deepEqual(scan(' * f({ a: 1 });\n * // { a: 2, b: "x" }'), ['// { a: 2, b: "x" }']);
  assert.deepEqual(scan(" * seconds(2_500); // 2.5"), ["seconds(2_500); // 2.5"]);
  assert.deepEqual(scan(' * const url = "http://x//y"; // a URL, not a comment'), []);
  assert.deepEqual(scan(" * assert.equal(seconds(2_500), 2.5); // 2.5 s"), []);
  assert.deepEqual(scan(" * // what follows is a sketch\n * run();"), []);
  const commented = (body: string) => exampleBlocks("src/x/y.ts", doc(body)).flatMap(commentedOutCode);
  assert.deepEqual(
    commented(" * // const verdict = await policy.decide(call);\n * // shut(conn); shut(conn);"),
    [
      "// const verdict = await policy.decide(call);",
      "// shut(conn); shut(conn);",
    ],
  );
  assert.deepEqual(commented(" * // cancelled, or unavailable where it cannot be confined (see f())"), []);
  assert.deepEqual(commented(' * import { f } from "./f.ts";\n * // f(x) -> 1'), [
    "// f(x) -> 1",
    'import { f } from "./f.ts"; (and nothing else)',
  ]);
});

Deno.test("examples: every folder of src/ is held", async () => {
  const folders = new Set((await sourceFiles("src")).map(folderOf));
  assert.deepEqual([...folders].filter((folder) => !DONE.includes(folder)), []);
});

Deno.test("examples: no example in a finished folder of src/ leaves its result in a comment", async () => {
  const left = (await allBlocks())
    .filter((block) => !block.ignored && DONE.includes(folderOf(block.file)))
    .flatMap((block) => resultComments(block).map((line) => `${block.file}:${block.line}: ${line}`));
  assert.deepEqual(left, [], "assert the result (assert.equal, assert.deepEqual, assert.ok) instead");
});

Deno.test("examples: no example in a finished folder of src/ is code commented out", async () => {
  const left = (await allBlocks())
    .filter((block) => !block.ignored && DONE.includes(folderOf(block.file)))
    .flatMap((block) => commentedOutCode(block).map((line) => `${block.file}:${block.line}: ${line}`));
  assert.deepEqual(left, [], "run it and assert what it shows, or mark the example ignore and say why");
});

Deno.test("examples: an example marked ignore says why", async () => {
  const silent = (await allBlocks())
    .filter((block) => block.ignored && DONE.includes(folderOf(block.file)))
    .filter((block) => block.title === "" && !block.body.some((line) => /^\s*\/\//.test(line)))
    .map((block) => `${block.file}:${block.line}`);
  assert.deepEqual(silent, []);
});
