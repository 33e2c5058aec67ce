/**
 * Reads a Markdown page (the README, or a page of `docs/`) the way the docs test needs it: its fenced blocks (with the README line of each line),
 * what kind of block each is, the command lines of a shell block and what their comments claim, and the
 * `readme-test` markers that keep a block from running. Pure functions: the test runs what they find.
 *
 * @module
 */

/** One fenced block. */
export interface Block {
  /** The README line of the opening fence (1-based). */
  readonly line: number;
  /** The fence's language, lower-cased (`""` for none). */
  readonly lang: string;
  /** The lines between the fences, with their README line numbers. */
  readonly lines: readonly { readonly line: number; readonly text: string }[];
  /** Why the block is not run, from a `<!-- readme-test: not run (REASON) -->` right above it. */
  readonly notRun?: string;
}

/** The marker that keeps the next block from running, with its reason. */
const MARKER = /^<!--\s*readme-test:\s*not run\s*\((.+)\)\s*-->$/;

/**
 * Every fenced block of a Markdown text, in order. A malformed `readme-test` comment is an error, so that a typo
 * cannot turn a marker into prose and the block back into one that silently escapes.
 *
 * @example
 * ```ts
 * import { fencedBlocks } from "./readme_blocks.ts";
 * fencedBlocks("text\n~~~sh\necho hi\n~~~\n")[0].lines[0].text; // "echo hi"
 * ```
 */
export function fencedBlocks(markdown: string, file = "README.md"): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  let open: { line: number; fence: string; lang: string; indent: number; notRun?: string } | undefined;
  let body: { line: number; text: string }[] = [];
  let pendingMarker: string | undefined;
  let markerLine = 0;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i];
    const fence = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)/.exec(text);
    if (open) {
      if (fence && fence[2].startsWith(open.fence) && text.trim() === fence[2]) {
        blocks.push({ line: open.line, lang: open.lang, lines: body, notRun: open.notRun });
        open = undefined;
      } else {
        body.push({
          line: i + 1,
          text: text.slice(Math.min(open.indent, text.length - text.trimStart().length)),
        });
      }
      continue;
    }
    if (fence) {
      open = { line: i + 1, fence: fence[2], lang: fence[3].toLowerCase(), indent: fence[1].length };
      if (pendingMarker !== undefined) open.notRun = pendingMarker;
      pendingMarker = undefined;
      body = [];
      continue;
    }
    const trimmed = text.trim();
    if (/^<!--\s*readme-test\b/.test(trimmed)) {
      const marker = MARKER.exec(trimmed);
      if (!marker) {
        throw new Error(
          `${file}:${i + 1}: malformed marker ${JSON.stringify(trimmed)}: ` +
            "write <!-- readme-test: not run (REASON) --> right above the block",
        );
      }
      pendingMarker = marker[1].trim();
      markerLine = i + 1;
      continue;
    }
    if (trimmed !== "" && pendingMarker !== undefined) {
      throw new Error(`${file}:${markerLine}: a readme-test marker must stand right above a fenced block`);
    }
  }
  if (open) throw new Error(`${file}:${open.line}: the fenced block is never closed`);
  if (pendingMarker !== undefined) {
    throw new Error(`${file}:${markerLine}: a readme-test marker stands after the last block`);
  }
  return blocks;
}

/** The fence languages whose lines are commands. */
const SHELL_LANGS = new Set(["sh", "bash", "shell", "zsh", "console", "shell-session"]);

/** What a block is, and so how the test runs or checks it. */
export type BlockKind =
  | { readonly kind: "not-run"; readonly reason: string }
  /** Command lines for a shell. */
  | { readonly kind: "shell" }
  /** An MCP host's configuration (`mcpServers`). */
  | { readonly kind: "mcp-config"; readonly config: McpConfig }
  /** Envelopes, one JSON line each. */
  | { readonly kind: "envelopes"; readonly values: readonly unknown[] }
  /** A `tools.json` manifest, or one tool of it (`name` and `command`), which stands for a manifest of one. */
  | { readonly kind: "manifest"; readonly value: unknown }
  /** A program shown whole (its first line a `#!`), to be saved as a file: checked by its interpreter's parser. */
  | { readonly kind: "script"; readonly interpreter: string; readonly code: string }
  /** The agent loop's `--output jsonl` events, one JSON line each. */
  | { readonly kind: "agent-events"; readonly values: readonly Record<string, unknown>[] }
  /** A program using the library (`src/mod.ts`). */
  | { readonly kind: "library"; readonly code: string }
  /** What `toolgate lint` prints. */
  | { readonly kind: "lint-output" }
  /** A block nobody taught the test to run: a failure naming the line. */
  | { readonly kind: "unknown"; readonly why: string };

/** The `mcpServers` object of an MCP host's configuration. */
export interface McpConfig {
  readonly mcpServers: Record<string, { command: string; args?: string[]; env?: Record<string, string> }>;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One line of `toolgate lint` output: a finding, or the closing summary. */
const LINT_FINDING = /^tool\[\d+\](?: "[^"]*")?: ([a-z-]+): \S.*$/;
const LINT_SUMMARY = /^\S+: (?:no findings, \d+ tools?|\d+ findings? in \d+ of \d+ tools?)$/;

/**
 * Decides what a block is. Shell fences are commands; a JSON fence is an MCP host's configuration, a manifest,
 * or envelopes one per line; a JSON-lines fence of objects with a `type` is the agent loop's events; a TypeScript fence that imports `src/mod.ts` is a library program; an unlabeled
 * or text fence is `toolgate lint` output when every line reads as such. Anything else is `unknown`.
 *
 * @example
 * ```ts
 * import { classify } from "./readme_blocks.ts";
 * classify({ line: 1, lang: "sh", lines: [{ line: 2, text: "toolgate validate" }] }).kind; // "shell"
 * ```
 */
export function classify(block: Block): BlockKind {
  if (block.notRun !== undefined) return { kind: "not-run", reason: block.notRun };
  const text = block.lines.map((l) => l.text).join("\n");
  const shebang = /^#!\s*(\S+)(?:\s+(\S+))?/.exec(block.lines[0]?.text ?? "");
  if (shebang) {
    // `#!/usr/bin/env python3` names its interpreter after env.
    const program = shebang[1].split("/").at(-1) === "env" && shebang[2] ? shebang[2] : shebang[1];
    return { kind: "script", interpreter: program.split("/").at(-1)!, code: text + "\n" };
  }
  if (SHELL_LANGS.has(block.lang)) return { kind: "shell" };
  if (block.lang === "json" || block.lang === "jsonc") {
    const whole = parseJson(text);
    if (isObject(whole) && isObject(whole.mcpServers)) return { kind: "mcp-config", config: whole as never };
    if (isObject(whole) && Array.isArray(whole.tools)) return { kind: "manifest", value: whole };
    if (isObject(whole) && typeof whole.name === "string" && Array.isArray(whole.command)) {
      return { kind: "manifest", value: { tools: [whole] } };
    }
    const lines = block.lines.map((l) => l.text).filter((t) => t.trim() !== "");
    const values = lines.map(parseJson);
    if (lines.length > 0 && values.every(isObject) && values.some((v) => isObject(v) && "ok" in v)) {
      return { kind: "envelopes", values };
    }
    return {
      kind: "unknown",
      why: "a JSON block that is neither an MCP host's configuration (mcpServers), a manifest (tools) " +
        "nor envelopes one per line",
    };
  }
  if (block.lang === "jsonl" || block.lang === "ndjson") {
    const values = block.lines.filter((l) => l.text.trim() !== "").map((l) => parseJson(l.text));
    if (values.length > 0 && values.every((v) => isObject(v) && typeof v.type === "string")) {
      return { kind: "agent-events", values: values as Record<string, unknown>[] };
    }
    return { kind: "unknown", why: "a JSON-lines block that is not events (objects with a `type`)" };
  }
  if (block.lang === "ts" || block.lang === "typescript") {
    if (/from\s+["'](?:\.\/src\/mod\.ts|@toolgate\/toolgate)["']/.test(text)) {
      return { kind: "library", code: text };
    }
    return { kind: "unknown", why: "a TypeScript block that does not import the library (./src/mod.ts)" };
  }
  if (block.lang === "" || block.lang === "text" || block.lang === "txt") {
    const lines = block.lines.map((l) => l.text).filter((t) => t.trim() !== "");
    if (lines.length > 0 && lines.every((t) => LINT_FINDING.test(t) || LINT_SUMMARY.test(t))) {
      return { kind: "lint-output" };
    }
    return { kind: "unknown", why: "a block without a language that is not `toolgate lint` output" };
  }
  return { kind: "unknown", why: `a block of language ${JSON.stringify(block.lang)}` };
}

/** A `toolgate lint` output block checked against the lint's own rules: each finding's rule, and the summary. */
export function lintOutputProblems(
  block: Block,
  ruleNames: readonly string[],
  file = "README.md",
): string[] {
  const problems: string[] = [];
  const indices = new Set<string>();
  let findings = 0;
  for (const { line, text } of block.lines) {
    const finding = LINT_FINDING.exec(text);
    if (finding) {
      findings++;
      indices.add(/^tool\[(\d+)\]/.exec(text)![1]);
      if (!ruleNames.includes(finding[1])) {
        problems.push(`${file}:${line}: no lint rule is named ${finding[1]}`);
      }
      continue;
    }
    const summary = /: (\d+) findings? in (\d+) of \d+ tools?$/.exec(text);
    if (summary && (Number(summary[1]) !== findings || Number(summary[2]) !== indices.size)) {
      problems.push(
        `${file}:${line}: the summary says ${summary[1]} findings in ${summary[2]} tools, ` +
          `the lines above show ${findings} in ${indices.size}`,
      );
    }
  }
  return problems;
}

/** One command line of a shell block. */
export interface CommandLine {
  /** The README line where it starts. */
  readonly line: number;
  /** The command as written (continuation lines joined), without its trailing comment. */
  readonly command: string;
  /** The trailing `# comment`, if any: what the line claims. */
  readonly comment?: string;
  /** In a `console` block, the output lines shown under the `$` line. */
  readonly output: readonly string[];
}

/** Where a `#` outside quotes starts a comment (at the start of a word), or -1. */
export function commentStart(text: string): number {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "\\") i++;
    else if (c === "'" || c === '"') quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]))) return i;
  }
  return -1;
}

/**
 * The command lines of a shell block: comment lines and blank lines skipped, `\` continuations joined, a
 * trailing comment kept apart, a here-document (`cat > f <<EOF` ... `EOF`) kept whole with the line that opens
 * it; in a `console` block only `$ ` lines are commands and the lines under one are its output.
 *
 * @example
 * ```ts
 * import { commandLines } from "./readme_blocks.ts";
 * const block = { line: 1, lang: "sh", lines: [{ line: 2, text: "toolgate validate   # exits 0" }] };
 * commandLines(block)[0].comment; // "exits 0"
 * ```
 */
export function commandLines(block: Block): CommandLine[] {
  const result: { line: number; command: string; comment?: string; output: string[] }[] = [];
  const consoleBlock = block.lang === "console" || block.lang === "shell-session";
  let pending: { line: number; text: string } | undefined;
  /** The here-document being read: the word that ends it, and the command it belongs to. */
  let heredoc: { word: string; dash: boolean; into: { command: string } } | undefined;
  for (const { line, text } of block.lines) {
    if (heredoc) {
      heredoc.into.command += `\n${text}`;
      if ((heredoc.dash ? text.replace(/^\t+/, "") : text) === heredoc.word) heredoc = undefined;
      continue;
    }
    let current = text;
    if (consoleBlock && !pending) {
      if (!/^\s*\$ /.test(text)) {
        if (text.trim() !== "") result.at(-1)?.output.push(text);
        continue;
      }
      current = text.replace(/^\s*\$ /, "");
    }
    if (!pending && (current.trim() === "" || current.trimStart().startsWith("#"))) continue;
    const joined = pending
      ? { line: pending.line, text: `${pending.text} ${current.trim()}` }
      : { line, text: current };
    if (/\\$/.test(joined.text) && commentStart(joined.text) === -1) {
      pending = { line: joined.line, text: joined.text.slice(0, -1).trimEnd() };
      continue;
    }
    pending = undefined;
    const at = commentStart(joined.text);
    const command = (at === -1 ? joined.text : joined.text.slice(0, at)).trim();
    const comment = at === -1 ? undefined : joined.text.slice(at + 1).trim();
    result.push({ line: joined.line, command, comment, output: [] });
    const opens = /<<(-?)\s*(['"]?)([A-Za-z_]\w*)\2$/.exec(command);
    if (opens) heredoc = { word: opens[3], dash: opens[1] === "-", into: result.at(-1)! };
  }
  if (pending) result.push({ line: pending.line, command: pending.text, output: [] });
  return result;
}

/** What a command line's comment claims about its run. */
export interface Claim {
  /** The exit status (default 0). */
  readonly exit: number;
  /** Whether stdout is one envelope line, and which. */
  readonly envelope?: { readonly ok: boolean; readonly kind?: string };
}

/**
 * What a line's trailing comment claims: `exits N` (else 0); `envelope` (stdout is one envelope line, `ok: true`
 * unless the comment says `ok: false`, `fails` or names a failure kind).
 *
 * @example
 * ```ts
 * import { claimOf } from "./readme_blocks.ts";
 * claimOf("run a tool, print its envelope", ["timeout"]); // { exit: 0, envelope: { ok: true } }
 * ```
 */
export function claimOf(comment: string | undefined, failureKinds: readonly string[]): Claim {
  if (comment === undefined) return { exit: 0 };
  const exit = /\bexit(?:s| status| code)?(?: with)? (\d+)\b/i.exec(comment);
  const kind = failureKinds.find((k) => new RegExp(`\\b${k}\\b`).test(comment));
  const failing = kind !== undefined || /ok: ?false|"ok": ?false|\bfails\b/.test(comment);
  const envelope = /\benvelope\b/i.test(comment) || kind !== undefined
    ? { ok: !failing, ...(kind ? { kind } : {}) }
    : undefined;
  return { exit: exit ? Number(exit[1]) : 0, ...(envelope ? { envelope } : {}) };
}

/**
 * Every `deno task NAME` the text mentions (`deno task -q NAME`, `npx -y deno@V task NAME` included).
 *
 * @example
 * ```ts
 * import { taskNames } from "./readme_blocks.ts";
 * taskNames("run `deno task -q agent call x` or `deno task test`"); // ["agent", "test"]
 * ```
 */
export function taskNames(markdown: string): string[] {
  const names = new Set<string>();
  for (const match of markdown.matchAll(/\bdeno(?:@[\d.]+)? task((?: -[-\w]+)*) ([a-z][\w:-]*)/g)) {
    names.add(match[2]);
  }
  return [...names];
}

/**
 * The rows of the first table under a `# TITLE` or `## TITLE` heading (up to the next heading of either level):
 * its cells, code spans unwrapped.
 */
export function tableUnder(markdown: string, title: string, nth = 0, file = "README.md"): string[][] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => /^#{1,2} /.test(l) && l.replace(/^#+ /, "").trim() === title);
  if (start === -1) throw new Error(`${file}: no "## ${title}" section`);
  const rows: string[][][] = [];
  let current: string[][] | undefined;
  for (let i = start + 1; i < lines.length && !/^#{1,2} /.test(lines[i]); i++) {
    const line = lines[i].trim();
    if (line.startsWith("|")) {
      if (!current) rows.push(current = []);
      if (/^\|[\s|:-]+\|$/.test(line)) continue;
      current.push(
        line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll("\\|", "|")),
      );
    } else current = undefined;
  }
  const table = rows[nth];
  if (!table) throw new Error(`${file}: no table ${nth + 1} under "## ${title}"`);
  return table.slice(1);
}

/** The code spans of a Markdown cell or line. */
export function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as `-`. */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

/** The lines of a Markdown text outside its fenced blocks, with their line numbers (1-based). */
function proseLines(markdown: string): { line: number; text: string }[] {
  const result: { line: number; text: string }[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, i) => {
    const mark = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence) {
      if (mark && mark.startsWith(fence) && text.trim() === mark) fence = undefined;
      return;
    }
    if (mark) {
      fence = mark;
      return;
    }
    result.push({ line: i + 1, text });
  });
  return result;
}

/** One heading of a page: its level, its text and its anchor (repeats numbered `-1`, `-2` as GitHub does). */
export interface Heading {
  readonly line: number;
  readonly level: number;
  readonly text: string;
  readonly anchor: string;
}

/**
 * The headings of a Markdown text, outside its fenced blocks.
 *
 * @example
 * ```ts
 * import { headings } from "./readme_blocks.ts";
 * headings("# A `b`: c\n\n## A `b`: c\n").map((h) => h.anchor); // ["a-b-c", "a-b-c-1"]
 * ```
 */
export function headings(markdown: string): Heading[] {
  const seen = new Map<string, number>();
  return proseLines(markdown).flatMap(({ line, text }) => {
    const match = /^(#{1,6}) +(.+?)\s*#*\s*$/.exec(text);
    if (!match) return [];
    const base = anchorOf(match[2]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return [{
      line,
      level: match[1].length,
      text: match[2],
      anchor: count === 0 ? base : `${base}-${count}`,
    }];
  });
}

/**
 * The link targets of a Markdown text (`[text](target)`, a link's text may run over lines), outside fenced blocks
 * and code spans, with the line each link starts on.
 *
 * @example
 * ```ts
 * import { links } from "./readme_blocks.ts";
 * links("see [the\nmanifest](docs/manifest.md#fields) and `[x](y)`\n"); // [{ line: 1, target: "docs/manifest.md#fields" }]
 * ```
 */
export function links(markdown: string): { line: number; target: string }[] {
  const prose = proseLines(markdown);
  // Code spans may hold link-like text; blank them, keeping every offset.
  const text = prose.map((l) => l.text.replace(/`[^`]*`/g, (span) => " ".repeat(span.length))).join("\n");
  const starts = prose.map((l) => l.line);
  const lineAt = (offset: number) => starts[text.slice(0, offset).split("\n").length - 1];
  return [...text.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => ({
    line: lineAt(m.index),
    target: m[1],
  }));
}

/** How many lines a page may have before it needs a table of contents: about a screen. */
export const SCREEN_LINES = 60;

/**
 * What a page's table of contents lacks: a page longer than a screen must link each of its `##` sections (a
 * `## Contents` heading aside) before the first of them; one with no sections to list says so.
 *
 * @example
 * ```ts
 * import { tocProblems } from "./readme_blocks.ts";
 * tocProblems("# t\n\n- [A](#a)\n\n## A\n" + "x\n".repeat(80), "p.md"); // []
 * ```
 */
export function tocProblems(markdown: string, file: string): string[] {
  if (markdown.split("\n").length <= SCREEN_LINES) return [];
  const sections = headings(markdown).filter((h) => h.level === 2 && h.anchor !== "contents");
  if (sections.length === 0) {
    return [`${file}: longer than ${SCREEN_LINES} lines and no "##" sections for a table of contents`];
  }
  const head = markdown.split("\n").slice(0, sections[0].line - 1).join("\n");
  const listed = new Set(links(head).map((l) => l.target));
  return sections.filter((h) => !listed.has(`#${h.anchor}`)).map((h) =>
    `${file}: the table of contents (before line ${
      sections[0].line
    }) does not link "## ${h.text}" (#${h.anchor})`
  );
}

/**
 * Programs the pages start that a user's PATH may lack, each with the facility of tests/requires.ts it is: Debian
 * installs nats-server as /usr/sbin/nats-server, and a user's PATH has no /usr/sbin.
 */
export const HOST_PROGRAMS = { "nats-server": "nats" } as const;

/** A host program as the command of a shell line: first, or after `;`, `&`, `|`, `(` and any `NAME=value`. */
function startedAt(program: string): RegExp {
  return new RegExp(
    `(^\\s*|[;&|(]\\s*)((?:[A-Za-z_][A-Za-z0-9_]*=\\S*\\s+)*)${program.replace("-", "\\-")}(?=\\s|$)`,
    "g",
  );
}

/** The {@linkcode HOST_PROGRAMS} a shell line starts (not those it only names, as `apt-get install nats-server`). */
export function hostProgramsOf(shell: string): (keyof typeof HOST_PROGRAMS)[] {
  return (Object.keys(HOST_PROGRAMS) as (keyof typeof HOST_PROGRAMS)[]).filter((program) =>
    startedAt(program).test(shell)
  );
}

/** The shell line with `program` started by its `path`, as a page tells a reader whose PATH lacks it. */
export function withProgramAt(shell: string, program: string, path: string): string {
  return shell.replace(
    startedAt(program),
    (_m, before, assignments) => `${before}${assignments}${path}`,
  );
}
