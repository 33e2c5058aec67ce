// The README and every page of docs/ are tested (issues 12 and 26): every fenced block a reader could run is run
// here as written, by a real shell in a temp HOME, against a loopback stand-in for the chat endpoint named through
// the variables the README
// documents; its MCP host configuration starts the installed server as a host would; its other claims that are
// cheap to check (the Deno pin, the tasks, the Commands table) are checked. A block the test cannot run must say
// so in the README (`<!-- readme-test: not run (REASON) -->`); an unmarked block it does not know fails.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { asEnvelope, FAILURE_KINDS, serialize } from "../src/contract.ts";
import { LINT_RULES } from "../src/manifest/lint_rules.ts";
import { COMMANDS, run } from "../src/main.ts";
import { probeSandbox } from "../src/sandbox/sandbox.ts";
import type { Io } from "../src/commands/cli.ts";
import {
  type ChatServer,
  type RecordedRequest,
  type Reply,
  sseData,
  startChatServer,
} from "./agent/chat_server.ts";
import { denoDir, hasStackTrace, REPO, runProgram } from "./support.ts";
import { CACHE, installNode } from "./gateway_support.ts";
import { facilityTest, findHostProgram, isRequired, requires, whyMissing } from "./requires.ts";
import {
  type Block,
  type BlockKind,
  type Claim,
  claimOf,
  classify,
  codeSpans,
  type CommandLine,
  commandLines,
  fencedBlocks,
  headings,
  HOST_PROGRAMS,
  hostProgramsOf,
  links,
  lintOutputProblems,
  type McpConfig,
  SCREEN_LINES,
  tableUnder,
  taskNames,
  tocProblems,
  withProgramAt,
} from "./readme_blocks.ts";

const README = await Deno.readTextFile(join(REPO, "README.md"));
/**
 * The pages a reader may paste from, as paths from the repository: the README, then every page of `docs/` in
 * name order (a page added later is tested without being named here).
 */
const PAGES: readonly string[] = [
  "README.md",
  ...[...Deno.readDirSync(join(REPO, "docs"))]
    .filter((entry) => entry.isFile && entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort(),
];
const TEXTS: ReadonlyMap<string, string> = new Map(
  PAGES.map((page) => [page, Deno.readTextFileSync(join(REPO, page))]),
);
/** A page's text. */
function pageText(page: string): string {
  const text = TEXTS.get(page);
  if (text === undefined) throw new Error(`${page} is not among the pages: ${PAGES.join(", ")}`);
  return text;
}
/**
 * Whether tools can be confined here. Without bubblewrap the README's examples still run, but a tool that can
 * write does not run at all (`unavailable`) and one that cannot runs with a "not confined" warning.
 */
const CONFINED =
  (await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin", "bwrap", Deno.env.toObject())).ok;
const KINDS = Object.keys(FAILURE_KINDS);

/** The pinned Deno of the README and the docs, from `npx -y deno@VERSION`. */
function readmePins(): string[] {
  return [
    ...new Set(
      [...TEXTS.values()].flatMap((text) => [...text.matchAll(/npx -y deno@([\d.]+)/g)].map((m) => m[1])),
    ),
  ];
}

Deno.test("README: the pinned Deno is the one running the tests, and the one CI installs", async () => {
  const pins = readmePins();
  assert.deepEqual(
    pins,
    [Deno.version.deno],
    `README pins ${pins.join(", ")}; the tests run ${Deno.version.deno}`,
  );
  const ci = await Deno.readTextFile(join(REPO, ".ci", "run"));
  assert.equal(/^DENO_VERSION=([\d.]+)$/m.exec(ci)?.[1], Deno.version.deno, ".ci/run pins another Deno");
});

/** The README's first two commands, as a new user types them: run a tool, run the tests. */
function firstCommands(): string[] {
  return commandLines(fencedBlocks(README)[0]).map((line) => line.command);
}

Deno.test("README: its first command, run as written in this folder, prints the envelope and no warning a new user cannot act on", async () => {
  const [first] = firstCommands();
  assert.match(first, /^npx -y deno@[\d.]+ task -q agent call get_time /, "the README's first command moved");
  // `npx -y deno@VERSION` is this runtime (its version is checked above); a new user's HOME, without state.
  const command = first.replace(/^npx -y deno@[\d.]+(?=\s)/, singleQuoted(Deno.execPath()));
  const home = await Deno.makeTempDir({ prefix: "toolgate_first_" });
  try {
    const result = await runProgram("sh", ["-c", command], {
      cwd: REPO,
      env: { HOME: home, DENO_DIR: denoDir() },
      clearEnv: true,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(envelopeProblem(result.stdout, { ok: true }), undefined, result.stdout);
    assert.equal(JSON.parse(result.stdout).result.timezone, "Europe/Helsinki");
    if (CONFINED) {
      // A read-only tool in toolgate's own folder loses nothing: nothing to say.
      assert.equal(result.stderr, "");
    } else {
      // Where nothing can be confined, one line says what that means for this call and what the person can do.
      assert.match(
        result.stderr,
        /^toolgate: warning: tools cannot be confined here \([^\n]+\): get_time will run unconfined, as you; pass --sandbox require[^\n]*\n$/,
      );
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("README: CI runs its test command as written, in a new user's home", async () => {
  const [, test] = firstCommands();
  assert.match(test, /^npx -y deno@[\d.]+ task -q test$/, "the README's test command moved");
  const ci = await Deno.readTextFile(join(REPO, ".ci", "run"));
  assert.equal(/^README_TEST_COMMAND='(.*)'$/m.exec(ci)?.[1], test, ".ci/run runs another test command");
});

Deno.test("docs/development.md: its dependencies, its check task and its entry files are the repository's", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(REPO, "deno.json")));
  const page = pageText("docs/development.md");
  const dependencies = page.slice(page.indexOf("## Dependencies"));
  for (const name of Object.keys(config.imports)) {
    // The OpenTelemetry packages are named once as a family: `@opentelemetry/api`, then `core`, `resources`, ...
    const short = name.replace(/^@opentelemetry\//, "");
    assert.ok(
      dependencies.includes(`\`${name}\``) || (name !== short && dependencies.includes(`\`${short}\``)),
      `deno.json imports ${name}; docs/development.md's dependency list does not name it`,
    );
  }
  // The check task's row lists its steps as the task runs them.
  const row = page.split("\n").find((line) => line.startsWith("| `deno task check`"));
  assert.ok(row, "a row for deno task check");
  const steps = config.tasks.check.split(" && ").map((step: string) =>
    step.replace(/ --allow-dirty| --quiet/g, "")
  );
  assert.deepEqual([...row.matchAll(/`([^`]+)`/g)].map((m) => m[1]).slice(1), steps);
  // The entry files the layout names are the layers test's entries, and exist.
  const entries = /^([a-z_]+\.ts(?:, [a-z_]+\.ts)*)\s+entries:/m.exec(page);
  assert.ok(entries, "the layout's entries line");
  const named = entries[1].split(", ").sort();
  const layers = await Deno.readTextFile(join(REPO, "tests", "layers_test.ts"));
  const held = /const ENTRIES = \[([^\]]+)\]/.exec(layers)![1].match(/[a-z_]+\.ts/g)!.sort();
  assert.deepEqual(named, held);
  for (const file of named) await Deno.stat(join(REPO, "src", file));
});

Deno.test("README and docs: every `deno task NAME` they mention exists in deno.json", async () => {
  const tasks = Object.keys(JSON.parse(await Deno.readTextFile(join(REPO, "deno.json"))).tasks);
  assert.ok(
    taskNames(README).includes("test") && taskNames(README).includes("agent"),
    `the README names only ${taskNames(README).join(", ")}`,
  );
  for (const page of PAGES) {
    for (const name of taskNames(pageText(page))) {
      assert.ok(tasks.includes(name), `${page} names \`deno task ${name}\`; deno.json has none`);
    }
  }
});

/** Runs the CLI's own entry in this process and returns what it printed. */
async function helpText(argv: string[]): Promise<string> {
  let out = "";
  let err = "";
  const io: Io = {
    env: {},
    cwd: REPO,
    stdout: (text) => Promise.resolve(void (out += text)),
    stderr: (text) => Promise.resolve(void (err += text)),
    stdin: () => Promise.resolve(""),
    interactive: false,
  };
  const code = await run(argv, io);
  assert.equal(code, 0, `toolgate ${argv.join(" ")} exited ${code}: ${err}`);
  return out;
}

/** The `--flags` of a Markdown cell's code spans, each with the choices written after it (`--format a|b`). */
function flagsOf(cell: string): { flag: string; choices: string[] }[] {
  return codeSpans(cell).flatMap((span) =>
    [...span.matchAll(/(?<![\w-])(--[a-z][\w-]*)(?: \[?([\w-]+(?:\|[\w-]+)+))?/g)].map((m) => ({
      flag: m[1],
      choices: m[2]?.split("|") ?? [],
    }))
  );
}

/** Every flag of a README cell, and each choice it lists, is in the help text of `argv`. */
async function assertInHelp(cell: string, argv: string[]): Promise<void> {
  const help = await helpText(argv);
  for (const { flag, choices } of flagsOf(cell)) {
    assert.match(
      help,
      new RegExp(`${flag}(?![\\w-])`),
      `toolgate ${argv.join(" ")} lacks ${flag}, which the README names`,
    );
    for (const choice of choices) {
      assert.match(help, new RegExp(`\\b${choice}\\b`), `toolgate ${argv.join(" ")} lacks ${flag} ${choice}`);
    }
  }
}

Deno.test("docs: every command and flag of the Commands page and the MCP server's table is in the help", async () => {
  const global = await helpText(["--help"]);
  const page = pageText("docs/commands.md");
  const commands = tableUnder(page, "Commands", 0, "docs/commands.md");
  assert.ok(commands.length >= 7, `only ${commands.length} rows in the Commands table`);
  for (const [cell] of commands) {
    for (const span of codeSpans(cell)) {
      const [program, name] = span.split(/\s+/);
      assert.equal(program, "toolgate", `Commands table: ${span} does not start with toolgate`);
      if (name.startsWith("--")) {
        // `toolgate --prompt TEXT`: an option of the agent loop, which `run` is.
        await assertInHelp(`\`${span}\``, ["run", "--help"]);
        continue;
      }
      assert.ok(COMMANDS.some((c) => c.name === name), `Commands table: no command ${name}`);
      assert.match(global, new RegExp(`^  ${name} `, "m"), `toolgate --help does not list ${name}`);
      await assertInHelp(`\`${span}\``, [name, "--help"]);
    }
  }
  const section = page.slice(page.indexOf("# Commands"), page.indexOf("\n## "));
  const globalLine = section.split("\n\n").find((p) => p.startsWith("Global options:"));
  assert.ok(globalLine, "no Global options paragraph");
  await assertInHelp(globalLine.split("agentcli's")[0], ["--help"]);
  // The options of every command that runs tools, and the server's caps.
  for (const [cell] of tableUnder(page, "Options of every command that runs tools", 0, "docs/commands.md")) {
    for (const name of ["call", "run", "serve"]) await assertInHelp(cell, [name, "--help"]);
  }
  for (const [cell] of tableUnder(pageText("docs/mcp.md"), "MCP server", 0, "docs/mcp.md")) {
    await assertInHelp(cell, ["serve", "--help"]);
  }
});

Deno.test("README: serve --help's MCP host example starts the server as the README's host configuration does", async () => {
  const help = await helpText(["serve", "--help"]);
  const example = /Example \(an MCP host's config[^\n]*\n\s*(\{.*\})$/m.exec(help)?.[1];
  assert.ok(example, `serve --help shows no host configuration:\n${help}`);
  const shown: { command: string; args: string[] } = JSON.parse(example);
  const config = fencedBlocks(README).map(classify).find((kind) => kind.kind === "mcp-config");
  assert.ok(config?.kind === "mcp-config", "the README has no MCP host configuration");
  const [server] = Object.values(config.config.mcpServers);
  assert.equal(shown.command, server.command);
  assert.deepEqual(shown.args, (server.args ?? []).slice(0, shown.args.length));
});

Deno.test("README harness: a block it cannot run fails naming its line, unless marked with a reason", () => {
  const text =
    "# t\n\n```python\nprint(1)\n```\n\n<!-- readme-test: not run (two machines) -->\n```sh\nssh b\n```\n";
  const blocks = fencedBlocks(text);
  assert.deepEqual(blocks.map((b) => [b.line, classify(b).kind]), [[3, "unknown"], [8, "not-run"]]);
  assert.deepEqual(classify(blocks[1]), { kind: "not-run", reason: "two machines" });
  assert.throws(
    () => fencedBlocks("<!-- readme-test: skip -->\n```sh\nx\n```\n"),
    /README\.md:1: malformed marker/,
  );
  assert.throws(
    () => fencedBlocks("<!-- readme-test: not run (far) -->\n\nprose\n```sh\nx\n```\n"),
    /README\.md:1: a readme-test marker must stand right above a fenced block/,
  );
  // Prose that names the marker is no marker.
  assert.equal(
    fencedBlocks("put `<!-- readme-test: not run (R) -->` above\n```sh\nx\n```\n")[0].notRun,
    undefined,
  );
  const lines = commandLines({
    line: 1,
    lang: "sh",
    lines: [
      { line: 2, text: "# a comment line" },
      { line: 3, text: 'toolgate call x \'{"a":"#b"}\'   # exits 1, kind timeout' },
      { line: 4, text: "toolgate validate \\" },
      { line: 5, text: "  --tools t.json" },
    ],
  });
  assert.deepEqual(lines.map((l) => [l.line, l.command]), [
    [3, `toolgate call x '{"a":"#b"}'`],
    [4, "toolgate validate --tools t.json"],
  ]);
  assert.deepEqual(claimOf(lines[0].comment, KINDS), { exit: 1, envelope: { ok: false, kind: "timeout" } });
  // A here-document is one command with the line that opens it, its body never read as commands or comments.
  const heredoc = commandLines({
    line: 1,
    lang: "sh",
    lines: [
      { line: 2, text: "cat > tools.json <<JSON   # the manifest" },
      { line: 3, text: '{ "tools": [] }' },
      { line: 4, text: "# not a comment" },
      { line: 5, text: "JSON" },
      { line: 6, text: "toolgate trust" },
    ],
  });
  assert.deepEqual(heredoc.map((l) => [l.line, l.command, l.comment]), [
    [2, 'cat > tools.json <<JSON\n{ "tools": [] }\n# not a comment\nJSON', "the manifest"],
    [6, "toolgate trust", undefined],
  ]);
});

/** The folders and processes every block shares: one temp HOME, one project, one stand-in, one install. */
interface World {
  readonly root: string;
  readonly home: string;
  /** `~/my-project`, and the folder a host's configuration names as the project. */
  readonly project: string;
  readonly env: Record<string, string>;
  readonly chat: ChatServer;
  /** Blocks not run, with their reason, for the closing list. */
  readonly notRun: string[];
  /** The page whose blocks run now, as problems name it (`docs/mcp.md`). */
  page: string;
}

/** A city in a prompt, and its zone: what the stand-in model asks `get_time` for. */
const ZONES: Record<string, string> = {
  Tokyo: "Asia/Tokyo",
  Helsinki: "Europe/Helsinki",
  London: "Europe/London",
};
/** The stand-in's final answers start with this. */
const ANSWER = "stand-in answer";

/** The message the stand-in model answers a request with: a `get_time` call for a time question, else text. */
function standInMessage(request: RecordedRequest): Record<string, unknown> {
  const messages: { role: string; content?: unknown }[] = request.body?.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === "tool") {
    const results = messages.slice(messages.findLastIndex((m) => m.role === "assistant") + 1);
    return { role: "assistant", content: `${ANSWER}: ${results.map((m) => String(m.content)).join(" ")}` };
  }
  const prompt = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
  // deno-lint-ignore no-explicit-any
  const offered: string[] = (request.body?.tools ?? []).map((t: any) => t?.function?.name);
  if (/\btime\b/i.test(prompt) && offered.includes("get_time")) {
    const city = Object.keys(ZONES).find((name) => prompt.includes(name));
    const args = JSON.stringify({ timezone: city ? ZONES[city] : "UTC" });
    return {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_1",
        type: "function",
        function: { name: "get_time", arguments: args },
      }],
    };
  }
  return { role: "assistant", content: `${ANSWER}.` };
}

/** The stand-in endpoint's reply, streamed when the request asks for a stream. */
function standIn(request: RecordedRequest): Reply {
  const message = standInMessage(request);
  const finish = message.tool_calls ? "tool_calls" : "stop";
  if (request.body?.stream === true) {
    const delta = message.tool_calls
      ? {
        role: "assistant",
        tool_calls: (message.tool_calls as Record<string, unknown>[]).map((call, index) => ({
          index,
          ...call,
        })),
      }
      : { role: "assistant", content: message.content };
    const chunk = (d: unknown, reason: string | null) => ({
      id: "chatcmpl-readme",
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: d, finish_reason: reason }],
    });
    const pieces = [sseData(chunk(delta, null)), sseData(chunk({}, finish))];
    if (request.body?.stream_options?.include_usage) {
      pieces.push(sseData({ ...chunk(null, null), choices: [], usage: USAGE }));
    }
    return { sse: [...pieces, sseData("[DONE]")] };
  }
  return {
    json: {
      id: "chatcmpl-readme",
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: USAGE,
    },
  };
}

/** The token usage the stand-in reports with each answer, as endpoints do. */
const USAGE = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };

async function makeWorld(): Promise<World> {
  const root = await Deno.makeTempDir({ prefix: "toolgate_readme_" });
  const home = join(root, "home");
  const project = join(home, "my-project");
  await Deno.mkdir(project, { recursive: true });
  await Deno.writeTextFile(join(project, "notes.md"), "# notes\n");
  // `npx -y deno@VERSION` becomes `deno`: this runtime, first on PATH (its version is checked above).
  const shims = join(root, "bin");
  await Deno.mkdir(shims);
  await Deno.symlink(Deno.execPath(), join(shims, "deno"));
  const hostPath = (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":").filter((dir) => {
    try {
      Deno.statSync(join(dir, "toolgate"));
      return false;
    } catch {
      return dir !== "";
    }
  });
  const chat = startChatServer(standIn);
  const env: Record<string, string> = {
    HOME: home,
    PATH: [join(home, ".local", "bin"), shims, ...hostPath].join(":"),
    DENO_DIR: denoDir(),
    NO_COLOR: "1",
    LANG: "C.UTF-8",
    // The endpoint, as the README names it; a line that sets its own loopback URL is pointed here too.
    OAI_BASE_URL: chat.baseUrl,
    OPENAI_BASE_URL: chat.baseUrl,
    OAI_MODEL: "readme-stand-in",
    // The machine's extra certificate authority for Node, as a reader's shell has it: npm reaches its registry
    // through a TLS-inspecting proxy on some machines (the README's gateway block runs `npm install`).
    ...(Deno.env.get("NODE_EXTRA_CA_CERTS")
      ? { NODE_EXTRA_CA_CERTS: Deno.env.get("NODE_EXTRA_CA_CERTS")! }
      : {}),
  };
  return { root, home, project, env, chat, notRun: [], page: "README.md" };
}

/** A command line as the shell runs it here, and what the test knows about it. */
interface Prepared {
  readonly source: CommandLine;
  /** The text given to the shell. */
  readonly shell: string;
  /** Why it is not run, when the test knows it must not be. */
  readonly skip?: string;
  /** What it must do, when the test knows better than its comment (a gateway call where nothing is confined). */
  readonly claim?: Claim;
  /** What else its stdout must show: a problem, or `undefined`. */
  readonly check?: (stdout: string) => string | undefined;
}

/** The README's loopback endpoint URLs, to be pointed at the stand-in. */
const ENDPOINT_URL =
  /((?:OAI_BASE_URL|OPENAI_BASE_URL)=|--base-url[= ])(["']?)http:\/\/(?:127\.0\.0\.1|localhost|\[::1\]):\d+(?:\/v1)?/g;
const TEST_TASK = /\bdeno task(?: -q| --quiet)? test\b/;
const INSTALL_TASK = /\bdeno task(?: -q| --quiet)? install\b/;
const CALL = /(?:^|[\s;&|(])(?:toolgate|deno task(?: -q| --quiet)? agent)\s(?:.*\s)?call\s/;
const AGENT =
  /(?:^|[\s;&|(])(?:toolgate|deno task(?: -q| --quiet)? agent)\s(?:.*\s)?(?:--?prompt(?:-file)?[\s=]|run\s)/;
const TOOLGATE_WORD = /(?:^|[;&|(]\s*|\s)toolgate(?:\s|$)/;

function prepare(source: CommandLine, world: World): Prepared {
  let shell = source.command.replace(/\bnpx -y deno@[\d.]+(?=\s)/g, "deno");
  shell = shell.replace(ENDPOINT_URL, (_m, name, quote) => `${name}${quote}${world.chat.baseUrl}`);
  shell = shell.replaceAll("/path/to/your/project", world.project);
  if (TEST_TASK.test(shell)) {
    return {
      source,
      shell: "true",
      skip: "the test suite itself (this test is part of it; .ci/run runs it as the README's test command)",
    };
  }
  const upstream = UPSTREAM_CALL.exec(shell);
  if (upstream) return { source, shell, ...upstreamExpectation(upstream[1]) };
  if (ASKS_ON_TERMINAL.test(source.comment ?? "")) {
    // It wants a person at a terminal: it gets one (script(1) makes a pty), and the answer typed into it.
    shell = `printf '%s\\n' ${TYPED_ANSWER} | script -qefc ${singleQuoted(shell)} /dev/null`;
  }
  return { source, shell };
}

/** A call of an MCP server's tool through the gateway (the README's gateway block), and the tool's name. */
const UPSTREAM_CALL = /(?:^|[\s;&|(])toolgate call (mcp__[\w-]+__[\w-]+)\s/;
/** The text of the content blocks each gateway call of the docs answers with, where its server runs. */
const UPSTREAM_ANSWERS: Record<string, string> = { mcp__fs__read_text_file: "hello\n" };

/**
 * What a gateway call of the docs must print. Where tools can be confined: the envelope whose content blocks
 * hold the server's answer. Where they cannot, a server whose profile writes never runs unconfined: the call
 * answers `unavailable`, naming `--sandbox off` (as the page says).
 */
function upstreamExpectation(tool: string): Pick<Prepared, "claim" | "check"> {
  if (!CONFINED) {
    return {
      claim: { exit: 1, envelope: { ok: false, kind: "unavailable" } },
      check: (stdout) =>
        /--sandbox off/.test(stdout)
          ? undefined
          : `the unavailable envelope does not name --sandbox off: ${stdout}`,
    };
  }
  return {
    claim: { exit: 0, envelope: { ok: true } },
    check: (stdout) => {
      const expected = UPSTREAM_ANSWERS[tool];
      if (expected === undefined) {
        return `the docs test knows no answer for ${tool}: add it to UPSTREAM_ANSWERS`;
      }
      let content: unknown;
      try {
        content = JSON.parse(stdout).content;
      } catch {
        return undefined; // Said by the envelope's own check.
      }
      const texts = Array.isArray(content)
        ? content.map((block) => block?.type === "text" ? block.text : "")
        : [];
      return texts.join("") === expected
        ? undefined
        : `its content blocks do not hold ${JSON.stringify(expected)}: ${cut(JSON.stringify(content))}`;
    },
  };
}

/** A line of a block that installs the gateway's servers into `~/mcp-servers` (the README's gateway block). */
const GATEWAY_INSTALL = /\bnpm install --prefix ~\/mcp-servers\s/;

/**
 * Readies a block that installs MCP servers into `~/mcp-servers`: the test's own install of the same packages
 * (tests/.cache/gateway) is copied there first, so that the block's `npm install` finds them and is quick. A
 * problem when they cannot be had and CI requires them (TOOLGATE_REQUIRE_GATEWAY=1); `"skip"` (said on stderr
 * and listed) when they cannot be had here.
 */
async function gatewayReady(block: Block, world: World): Promise<string | "skip" | undefined> {
  const missing = await installNode();
  if (missing !== undefined) {
    const why = `the gateway's MCP servers cannot be installed here: ${missing}`;
    try {
      requires("gateway", why, `README and docs: ${world.page}:${block.line}`);
    } catch (error) {
      return (error as Error).message;
    }
    world.notRun.push(`${world.page}:${block.line}: the whole block: ${why}`);
    return "skip";
  }
  const servers = join(world.home, "mcp-servers");
  await Deno.mkdir(servers, { recursive: true });
  const files = ["package.json", "package-lock.json", "node_modules"].map((name) => join(CACHE, name));
  const copied = await runProgram("cp", ["-a", ...files, servers]);
  return copied.code === 0
    ? undefined
    : `${world.page}:${block.line}: cannot copy ${CACHE}: ${copied.stderr}`;
}

/** A comment saying the line asks a person something on the terminal. */
const ASKS_ON_TERMINAL = /\b(?:asks?|prompts?)\b.*\bterminal\b/i;
/** What a person types when a line asks on the terminal. */
const TYPED_ANSWER = "readme-test-typed-answer";

/** A shell word in single quotes. */
function singleQuoted(text: string): string {
  return `'${text.replaceAll("'", `'"'"'`)}'`;
}

/**
 * The variables a block uses that a reader is expected to have set (`"$TOKEN"`) and this world does not set:
 * each gets a stand-in value, `readme-test-NAME`, unless a line of the block assigns it.
 */
function readerVariables(lines: readonly Prepared[], world: World): Record<string, string> {
  const text = lines.map((l) => l.shell).join("\n");
  const assigned = new Set(
    [...text.matchAll(/(?:^|[\s;&|(])(?:export\s+)?([A-Za-z_]\w*)=/g)].map((m) => m[1]),
  );
  // The shell's own (`$PWD`) are set by the shell, as for a reader.
  const used = [...text.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]).filter((name) =>
    !SHELL_VARIABLES.has(name)
  );
  return Object.fromEntries(
    used.filter((name) => !(name in world.env) && !assigned.has(name)).map((
      name,
    ) => [name, `readme-test-${name}`]),
  );
}

/** Variables the shell itself sets. */
const SHELL_VARIABLES = new Set(["PWD", "OLDPWD"]);

/** What one line left behind. */
interface LineRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** `command -v toolgate` after the line. */
  readonly which: string;
  /** Requests the stand-in endpoint got during the line. */
  readonly requests: readonly RecordedRequest[];
}

const BLOCK_TIMEOUT_MS = 30_000;

/**
 * Runs a shell block's lines one by one in one bash, started in this checkout (the folder the README's first
 * commands are typed in), so that `cd` and `export` carry on to the next line as they do for a reader. Each
 * line's output, status and `command -v toolgate` go to files; the block's process group is ended afterwards,
 * so that a line that started a server in the background leaves nothing behind.
 */
/** A line's run, or why there is none. */
type LineOutcome = LineRun | "hung" | "not reached";

async function runShellBlock(lines: readonly Prepared[], world: World): Promise<LineOutcome[]> {
  const dir = await Deno.makeTempDir({ dir: world.root, prefix: "block_" });
  const script = [
    ...Object.entries(readerVariables(lines, world)).map(([name, value]) =>
      `export ${name}=${singleQuoted(value)}`
    ),
    `cd ${JSON.stringify(REPO)} || exit 99`,
  ];
  lines.forEach((line, i) => {
    const at = (what: string) => JSON.stringify(join(dir, `${i}.${what}`));
    script.push(
      `printf '%s' "$(date +%s%3N)" >${at("start")}`,
      `{ ${line.shell}\n} >${at("out")} 2>${at("err")} </dev/null; echo $? >${at("rc")}`,
      `command -v toolgate >${at("which")}`,
    );
  });
  await Deno.writeTextFile(join(dir, "script.sh"), script.join("\n") + "\n");
  const before = world.chat.requests.length;
  // A block that installs runs as on a fresh Debian account: its PATH has no ~/.local/bin until the block puts
  // it there, so the README's paste must (its next line finds the installed `toolgate` or fails).
  const userBin = join(world.home, ".local", "bin");
  const env = lines.some((line) => INSTALL_TASK.test(line.shell))
    ? { ...world.env, PATH: (world.env.PATH ?? "").split(":").filter((dir) => dir !== userBin).join(":") }
    : world.env;
  const child = new Deno.Command("setsid", {
    args: ["bash", "--noprofile", "--norc", join(dir, "script.sh")],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const timer = setTimeout(() => killGroup(child.pid), BLOCK_TIMEOUT_MS);
  await child.status;
  clearTimeout(timer);
  killGroup(child.pid);
  const read = (i: number, what: string) => {
    try {
      return Deno.readTextFileSync(join(dir, `${i}.${what}`));
    } catch {
      return undefined;
    }
  };
  const requests = world.chat.requests.slice(before);
  return lines.map((_line, i): LineOutcome => {
    const rc = read(i, "rc");
    if (rc === undefined) return read(i, "start") === undefined ? "not reached" : "hung";
    const start = Number(read(i, "start"));
    const end = Number(read(i + 1, "start") ?? Infinity);
    return {
      code: Number(rc.trim()),
      stdout: read(i, "out") ?? "",
      stderr: read(i, "err") ?? "",
      which: (read(i, "which") ?? "").trim(),
      requests: requests.filter((r) => r.at >= start && r.at <= end),
    };
  });
}

/** Ends a block's process group (bash and anything a line left in the background). */
function killGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** A long text cut for a failure message. */
function cut(text: string, max = 600): string {
  return text.length <= max ? text : `${text.slice(0, max)}... (${text.length} characters)`;
}

/** One envelope line on stdout, or why not. */
function envelopeProblem(stdout: string, expected: { ok: boolean; kind?: string }): string | undefined {
  const lines = stdout.split("\n").filter((l) => l !== "");
  if (lines.length !== 1) return `expected exactly one envelope line on stdout, got ${lines.length}`;
  let value: unknown;
  try {
    value = JSON.parse(lines[0]);
  } catch {
    return `stdout is not JSON: ${cut(lines[0])}`;
  }
  const envelope = asEnvelope(value);
  if (!envelope) return `stdout is not an envelope: ${cut(lines[0])}`;
  if (envelope.ok !== expected.ok) {
    return `expected an envelope with ok: ${expected.ok}, got ${cut(lines[0])}`;
  }
  if (expected.kind && !envelope.ok && envelope.kind !== expected.kind) {
    return `expected kind ${expected.kind}, got ${envelope.kind}`;
  }
  return undefined;
}

/** What is wrong with one line's run, measured against what the README (and the line's comment) claims. */
function lineProblems(line: Prepared, result: LineOutcome, world: World): string[] {
  const claim = line.claim ?? claimOf(line.source.comment, KINDS);
  if (result === "hung") {
    return [
      `did not finish within ${BLOCK_TIMEOUT_MS / 1000} s (a server? end the line with & or mark the block)`,
    ];
  }
  if (result === "not reached") return ["not reached: a line above did not finish"];
  const problems: string[] = [];
  const tail = (text: string) => text.trim().split("\n").slice(-15).join("\n");
  if (result.code !== claim.exit) {
    problems.push(
      `exit ${result.code}, expected ${claim.exit}\nstdout:\n${tail(result.stdout)}\nstderr:\n${
        tail(result.stderr)
      }`,
    );
  }
  if (hasStackTrace(result.stderr)) problems.push(`a stack trace on stderr:\n${tail(result.stderr)}`);
  const envelope = claim.envelope ?? (CALL.test(line.shell) ? { ok: claim.exit === 0 } : undefined);
  if (envelope) {
    const problem = envelopeProblem(result.stdout, envelope);
    if (problem) problems.push(problem);
  }
  const checked = line.check?.(result.stdout);
  if (checked !== undefined) problems.push(checked);
  const installed = join(world.home, ".local", "bin", "toolgate");
  if (INSTALL_TASK.test(line.shell) && !result.stdout.includes(`installed ${installed}`)) {
    problems.push(`expected "installed ${installed}" on stdout, got: ${result.stdout.trim()}`);
  }
  if (TOOLGATE_WORD.test(line.shell) && result.which !== installed) {
    problems.push(`\`toolgate\` on PATH is ${JSON.stringify(result.which)}, not the installed ${installed}`);
  }
  if (AGENT.test(line.shell) && claim.exit === 0) {
    if (result.requests.length === 0) problems.push("the stand-in endpoint got no request");
    if (!result.stdout.includes(ANSWER)) {
      problems.push(`the stand-in's answer is not on stdout: ${tail(result.stdout)}`);
    }
    for (const request of result.requests) {
      // deno-lint-ignore no-explicit-any
      for (const message of (request.body?.messages ?? []).filter((m: any) => m.role === "tool")) {
        const problem = envelopeProblem(String(message.content), { ok: true });
        if (problem) problems.push(`a tool result sent to the model: ${problem}`);
      }
    }
  }
  // The reader's home is `~` on the page.
  problems.push(...consoleOutputProblems(line.source.output, result.stdout.replaceAll(world.home, "~")));
  return problems;
}

/**
 * A `console` block's output lines under a command: a JSON line must match a stdout line in `ok`, `kind` and its
 * keys; a text line must appear with its digits free to differ (and the home folder written `~`).
 */
function consoleOutputProblems(expected: readonly string[], stdout: string): string[] {
  const shape = (text: string) => {
    try {
      const parsed = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null) {
        // Where tools cannot be confined, an envelope also says so in `warnings`, which the page does not show.
        const value = unconfinedWarningsDropped({ envelope: parsed }).envelope as Record<string, unknown>;
        return JSON.stringify([value.ok, value.kind, Object.keys(value).sort()]);
      }
    } catch {
      // Text.
    }
    return text.trim().replace(/\d+/g, "0");
  };
  const actual = new Set(stdout.split("\n").map(shape));
  return expected.filter((line) => !actual.has(shape(line))).map((line) => `output line not seen: ${line}`);
}

async function runShell(block: Block, world: World): Promise<string[]> {
  const found = hostProgramsReady(commandLines(block).map((line) => prepare(line, world)), block, world);
  if (found === "skip") return [];
  if (typeof found === "string") return [found];
  let prepared = found;
  if (prepared.length === 0) return [`${world.page}:${block.line}: a ${block.lang} block without a command`];
  if (prepared.some((l) => GATEWAY_INSTALL.test(l.shell))) {
    // Where nothing can be confined, a server whose profile writes cannot be started to pin its tools: `trust`
    // says so per server and exits 1 (the manifest itself is trusted).
    if (!CONFINED) {
      prepared = prepared.map((l) =>
        /(?:^|[\s;&|(])toolgate trust\s*$/.test(l.shell)
          ? {
            ...l,
            claim: { exit: 1 },
            check: (stdout) =>
              /MCP server "\w+": not pinned, it cannot be used: .*--sandbox off/.test(stdout)
                ? undefined
                : `trust does not say which server cannot be pinned, and why: ${stdout}`,
          }
          : l
      );
    }
    const problem = await gatewayReady(block, world);
    if (problem === "skip") return [];
    if (problem !== undefined) return [problem];
  }
  // A reader of any later section has installed `toolgate` as the README's opening says; so has this world.
  if (
    prepared.some((l) => TOOLGATE_WORD.test(l.shell)) && !prepared.some((l) => INSTALL_TASK.test(l.shell))
  ) {
    await ensureInstalled(world);
  }
  for (const line of prepared) {
    if (line.skip) {
      world.notRun.push(`${world.page}:${line.source.line}: \`${line.source.command}\`: ${line.skip}`);
    }
  }
  const results = await runShellBlock(prepared, world);
  return prepared.flatMap((line, i) => {
    if (line.skip) return [];
    const ran = line.shell === line.source.command ? "" : ` (run as \`${line.shell}\`)`;
    return lineProblems(line, results[i], world).map((p) =>
      `${world.page}:${line.source.line}: \`${line.source.command}\`${ran}: ${p}`
    );
  });
}

/**
 * The block's lines with each program of {@linkcode HOST_PROGRAMS} they start (nats-server) given by the path the
 * tests find it at (tests/requires.ts: the world's PATH, then the system folders a user's PATH lacks), as the
 * page tells such a reader to start it. Where it is nowhere: `"skip"` (said and listed), or a problem where its
 * facility is required.
 */
function hostProgramsReady(
  prepared: readonly Prepared[],
  block: Block,
  world: Pick<World, "env" | "notRun" | "page">,
  find: (program: string, path: string) => string | undefined = findHostProgram,
): Prepared[] | string | "skip" {
  const out: Prepared[] = [];
  for (const line of prepared) {
    let shell = line.shell;
    for (const program of hostProgramsOf(shell)) {
      const path = find(program, world.env.PATH ?? "");
      if (path === undefined) {
        const why = `${program} is not installed here`;
        try {
          requires(HOST_PROGRAMS[program], why, `README and docs: ${world.page}:${block.line}`);
        } catch (error) {
          return (error as Error).message;
        }
        world.notRun.push(`${world.page}:${block.line}: the whole block: ${why}`);
        return "skip";
      }
      shell = withProgramAt(shell, program, path);
    }
    out.push({ ...line, shell });
  }
  return out;
}

/** Installs `toolgate` into the temp HOME as the README says, unless a block did already. */
async function ensureInstalled(world: World): Promise<void> {
  const installed = join(world.home, ".local", "bin", "toolgate");
  try {
    await Deno.stat(installed);
    return;
  } catch {
    // Not yet.
  }
  const result = await runProgram(Deno.execPath(), ["task", "-q", "install"], {
    cwd: REPO,
    env: world.env,
    clearEnv: true,
  });
  assert.equal(result.code, 0, result.stderr);
}

/** Sample arguments for tools a configuration approves, to call them through the host's server. */
const SAMPLE_CALLS: Record<string, Record<string, unknown>> = {
  fs_write_file: { path: "readme-check.txt", content: "written through MCP\n" },
  fs_edit: { path: "readme-check.txt", old_string: "through MCP", new_string: "and edited through MCP" },
  fs_mkdir: { path: "readme-check-dir" },
};

/**
 * An MCP host's configuration: each server is started exactly as it says (the command found on PATH, the args
 * with the README's placeholder project path made real), from a folder of the host's own, and driven by the
 * official SDK client over stdio. The server must list tools; with `--cwd` it works on that project (the seeded
 * file is listed); the tools `--allow-tools` names run; a tool that changes things and is not named is
 * `rejected`, since this client cannot be asked.
 */
async function runMcpConfig(block: Block, config: McpConfig, world: World): Promise<string[]> {
  await ensureInstalled(world);
  const hostFolder = await Deno.makeTempDir({ dir: world.root, prefix: "host_" });
  // What the sample edit changes, whether or not the sample write ran before it.
  await Deno.writeTextFile(join(world.project, "readme-check.txt"), "written through MCP\n");
  const problems: string[] = [];
  for (const [name, server] of Object.entries(config.mcpServers)) {
    const args = (server.args ?? []).map((arg) => arg.replaceAll("/path/to/your/project", world.project));
    const where = `${world.page}:${block.line}: server ${JSON.stringify(name)} (${server.command} ${
      args.join(" ")
    })`;
    const transport = new StdioClientTransport({
      command: server.command,
      args,
      cwd: hostFolder,
      env: { ...world.env, ...server.env },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
    const client = new Client({ name: "readme-host", version: "1.0.0" });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      if (tools.length === 0) problems.push(`${where}: lists no tools`);
      // As the README's MCP results say: a success's structuredContent is the result, a failure's
      // (isError) the envelope.
      const call = async (tool: string, toolArgs: Record<string, unknown>) => {
        const answer = await client.callTool({ name: tool, arguments: toolArgs });
        // deno-lint-ignore no-explicit-any
        return { isError: answer.isError === true, structured: answer.structuredContent as any };
      };
      const cwd = args.indexOf("--cwd");
      if (cwd !== -1) {
        const listing = await call("fs_list_dir", { path: "." });
        // deno-lint-ignore no-explicit-any
        const names = (listing.structured?.entries ?? []).map((e: any) => e.name);
        if (listing.isError || !names.includes("notes.md")) {
          problems.push(
            `${where}: fs_list_dir of "." does not show the project: ${cut(JSON.stringify(listing))}`,
          );
        }
      }
      if (args.includes("--allow-tools")) {
        const allowed = args[args.indexOf("--allow-tools") + 1].split(",");
        for (const tool of allowed.filter((t) => SAMPLE_CALLS[t])) {
          const answer = await call(tool, SAMPLE_CALLS[tool]);
          // Unconfinable here, an approved tool that can write is refused by the sandbox, not by the approval
          // policy (which would say `rejected`): `unavailable`, pointing at --sandbox off.
          const unconfinable = !CONFINED && answer.isError && answer.structured?.kind === "unavailable" &&
            /--sandbox off/.test(answer.structured?.message ?? "");
          if (answer.isError && !unconfinable) {
            problems.push(`${where}: ${tool}, approved, answered ${cut(JSON.stringify(answer.structured))}`);
          }
        }
        if (!args.includes("--yes") && !allowed.includes("fs_remove")) {
          const answer = await call("fs_remove", { path: "notes.md" });
          if (!answer.isError || answer.structured?.kind !== "rejected") {
            problems.push(
              `${where}: fs_remove, not approved, answered ${cut(JSON.stringify(answer.structured))}`,
            );
          }
        }
      }
    } catch (error) {
      problems.push(
        `${where}: ${error instanceof Error ? error.message : String(error)}\nstderr:\n${stderr}`,
      );
    } finally {
      await client.close();
    }
  }
  return problems;
}

/**
 * A library program: run with this runtime from the checkout (its `./src/mod.ts` import is relative to it),
 * type-checked. Each `console.log(serialize(...))` prints an envelope: a failure kind named in that line's
 * comment is the one expected, else `ok: true`.
 */
async function runLibrary(block: Block, code: string, world: World): Promise<string[]> {
  const result = await runProgram(Deno.execPath(), ["eval", "--check", "--ext=ts", code], {
    cwd: REPO,
    env: world.env,
    clearEnv: true,
  });
  const where = `${world.page}:${block.line}`;
  if (result.code !== 0) return [`${where}: exit ${result.code}\n${result.stderr}`];
  const printed = block.lines.filter((l) => /console\.log\(serialize\(/.test(l.text));
  const out = result.stdout.split("\n").filter((l) => l !== "");
  if (out.length !== printed.length) {
    return [`${where}: ${printed.length} envelopes expected, got:\n${result.stdout}`];
  }
  return printed.flatMap((line, i) => {
    const comment = line.text.split("//")[1];
    const kind = KINDS.find((k) => comment !== undefined && new RegExp(`\\b${k}\\b`).test(comment));
    const problem = envelopeProblem(out[i], kind ? { ok: false, kind } : { ok: true });
    return problem ? [`${world.page}:${line.line}: ${problem}`] : [];
  });
}

/** The keys of an event, and of each object in it, one level down: its shape, whatever the values. */
function eventShape(event: Record<string, unknown>): string[] {
  return Object.entries(event).flatMap(([key, value]) =>
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? [key, ...Object.keys(value).map((inner) => `${key}.${inner}`)]
      : [key]
  ).sort();
}

/**
 * The event as the README shows it on a machine that confines tools: where none can be confined, a tool's
 * envelope also carries `warnings` saying so (and only that), which the README's example does not show.
 */
function unconfinedWarningsDropped(event: Record<string, unknown>): Record<string, unknown> {
  const envelope = event.envelope;
  if (CONFINED || typeof envelope !== "object" || envelope === null || !("warnings" in envelope)) {
    return event;
  }
  const { warnings, ...rest } = envelope as Record<string, unknown>;
  const unconfined = Array.isArray(warnings) &&
    warnings.every((w) => typeof w === "string" && w.startsWith("not confined: "));
  return unconfined ? { ...event, envelope: rest } : event;
}

/** The event fields that must be equal, not only present: what the conversation was, not what it measured. */
const EVENT_FIELDS = [
  "type",
  "step",
  "name",
  "ok",
  "finish_reason",
  "tool_calls",
  "arguments",
  "tools",
  "tool_stubs",
];

/**
 * `--output jsonl` events: the agent loop asked for the time in Tokyo (the conversation the README's example
 * shows) against the stand-in, which reports usage, from the project folder (so with the built-in belt). Its
 * events must come in the README's order, each with the README's keys (and those of its objects), and with
 * the same type, step, tool, outcome and counts.
 */
async function runAgentEvents(
  block: Block,
  values: readonly Record<string, unknown>[],
  world: World,
): Promise<string[]> {
  await ensureInstalled(world);
  const prompt = "What time is it in Tokyo?";
  const result = await runProgram("toolgate", ["--prompt", prompt, "--output", "jsonl"], {
    cwd: world.project,
    env: world.env,
    clearEnv: true,
  });
  const where = `${world.page}:${block.line}: \`toolgate --prompt ${JSON.stringify(prompt)} --output jsonl\``;
  if (result.code !== 0) return [`${where}: exit ${result.code}\n${result.stderr}`];
  const events = result.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
  const types = (list: readonly Record<string, unknown>[]) => list.map((e) => e.type).join(", ");
  if (events.length !== values.length) {
    return [
      `${where}: printed ${events.length} events (${types(events)}), the README shows ${values.length} (${
        types(values)
      })`,
    ];
  }
  const lines = block.lines.filter((l) => l.text.trim() !== "");
  return values.flatMap((shown, i) => {
    const got = unconfinedWarningsDropped(events[i]);
    const problems: string[] = [];
    if (eventShape(shown).join() !== eventShape(got).join()) {
      problems.push(`keys ${eventShape(shown).join(", ")}; the run printed ${eventShape(got).join(", ")}`);
    }
    for (const field of EVENT_FIELDS.filter((f) => f in shown)) {
      if (JSON.stringify(shown[field]) !== JSON.stringify(got[field])) {
        problems.push(
          `${field} ${JSON.stringify(shown[field])}; the run printed ${JSON.stringify(got[field])}`,
        );
      }
    }
    return problems.map((p) => `${world.page}:${lines[i].line}: ${p}\n  run: ${cut(JSON.stringify(got))}`);
  });
}

/** Envelope examples: each must read as an envelope and be written as `serialize` writes it. */
function checkEnvelopes(block: Block, values: readonly unknown[], file: string): string[] {
  const lines = block.lines.filter((l) => l.text.trim() !== "");
  return values.flatMap((value, i) => {
    const envelope = asEnvelope(value);
    if (!envelope) return [`${file}:${lines[i].line}: not an envelope`];
    const canonical = serialize(value as never);
    return canonical === lines[i].text.trim()
      ? []
      : [`${file}:${lines[i].line}: not as serialize writes it (ok first, keys sorted):\n${canonical}`];
  });
}

/** A manifest example: it must hold to `tools.schema.json`. */
async function checkManifest(block: Block, value: unknown, file: string): Promise<string[]> {
  const { Ajv } = await import("ajv");
  const schema = JSON.parse(await Deno.readTextFile(join(REPO, "tools.schema.json")));
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
  return validate(value) ? [] : [`${file}:${block.line}: ${JSON.stringify(validate.errors)}`];
}

/**
 * A program shown whole, to be saved as a file: its interpreter parses it without running it (`sh -n`, Python's
 * `compile`). An interpreter missing here, or one the test does not know, leaves it unchecked, and listed.
 */
async function checkScript(block: Block, interpreter: string, code: string, world: World): Promise<string[]> {
  const where = `${world.page}:${block.line}`;
  const parse: Record<string, string[]> = {
    sh: ["sh", "-n", "-c", code],
    dash: ["sh", "-n", "-c", code],
    bash: ["bash", "-n", "-c", code],
    python3: ["python3", "-c", "import sys; compile(sys.argv[1], 'block', 'exec')", code],
  };
  parse.python = parse.python3;
  const argv = parse[interpreter];
  if (!argv) {
    world.notRun.push(`${where}: a ${interpreter} program: the test knows no parser for ${interpreter}`);
    return [];
  }
  try {
    const result = await runProgram(argv[0], argv.slice(1), {
      cwd: world.root,
      env: world.env,
      clearEnv: true,
    });
    return result.code === 0 ? [] : [`${where}: ${interpreter} does not parse it:\n${result.stderr}`];
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    world.notRun.push(`${where}: a ${interpreter} program: ${argv[0]} is not installed here`);
    return [];
  }
}

/** Runs or checks one block of the page `world.page`, and says what is wrong with it. */
async function blockProblems(block: Block, kind: BlockKind, world: World): Promise<string[]> {
  const where = `${world.page}:${block.line}`;
  switch (kind.kind) {
    case "not-run":
      world.notRun.push(`${where}: the whole block: ${kind.reason}`);
      return [];
    case "shell":
      return await runShell(block, world);
    case "mcp-config":
      return await runMcpConfig(block, kind.config, world);
    case "agent-events":
      return await runAgentEvents(block, kind.values, world);
    case "library":
      return await runLibrary(block, kind.code, world);
    case "envelopes":
      return checkEnvelopes(block, kind.values, world.page);
    case "manifest":
      return await checkManifest(block, kind.value, world.page);
    case "script":
      return await checkScript(block, kind.interpreter, kind.code, world);
    case "lint-output":
      return lintOutputProblems(block, LINT_RULES.map((rule) => rule.name), world.page);
    case "unknown":
      return [
        `${where}: ${kind.why}: the docs test does not know how to run it. Teach ` +
        "tests/readme_test.ts, or, if it truly cannot run here, put " +
        "<!-- readme-test: not run (REASON) --> right above it",
      ];
  }
}

Deno.test("README and docs: every fenced block runs as written, or says why it cannot", async (t) => {
  const world = await makeWorld();
  try {
    let count = 0;
    // The README first, as a reader starts there; then each page of docs/, in one world (one HOME, one install).
    for (const page of PAGES) {
      world.page = page;
      const blocks = fencedBlocks(pageText(page), page);
      if (page === "README.md") assert.ok(blocks.length > 0, "no fenced blocks found in the README");
      count += blocks.length;
      for (const block of blocks) {
        const kind = classify(block);
        await t.step(`${page}:${block.line} (${block.lang || "no language"}: ${kind.kind})`, async () => {
          const problems = await blockProblems(block, kind, world);
          assert.deepEqual(problems, [], problems.join("\n\n"));
        });
      }
    }
    const listed = world.notRun.length === 0 ? "none" : `\n  ${world.notRun.join("\n  ")}`;
    console.log(`README and docs: ${count} fenced blocks in ${PAGES.length} pages; not run: ${listed}`);
  } finally {
    await world.chat.close();
    await Deno.remove(world.root, { recursive: true });
  }
});

/** What a relative link of `page` points at that is not there: the file, or the heading its `#anchor` names. */
function linkProblem(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: ...: not this repository's.
  const [path, anchor] = target.split("#", 2) as [string, string | undefined];
  const file = path === "" ? page : join(dirname(page), path).replaceAll("\\", "/");
  let text: string | undefined;
  try {
    const info = Deno.statSync(join(REPO, file));
    if (info.isFile && file.endsWith(".md")) text = Deno.readTextFileSync(join(REPO, file));
  } catch {
    return `${target}: no file ${file}`;
  }
  if (anchor === undefined) return undefined;
  if (text === undefined) return `${target}: ${file} is not a Markdown page, so it has no #${anchor}`;
  return headings(text).some((h) => h.anchor === anchor)
    ? undefined
    : `${target}: ${file} has no heading #${anchor}`;
}

Deno.test("README and docs: every relative link and #anchor points at a file and a heading that exist", () => {
  const problems = PAGES.flatMap((page) =>
    links(pageText(page)).flatMap(({ line, target }) => {
      const problem = linkProblem(page, target);
      return problem ? [`${page}:${line}: ${problem}`] : [];
    })
  );
  assert.deepEqual(problems, [], problems.join("\n"));
});

Deno.test("docs harness: a broken link or anchor is found, a good one passes, code is not a link", () => {
  assert.equal(linkProblem("README.md", "docs/manifest.md"), undefined);
  assert.equal(linkProblem("docs/manifest.md", "../README.md#install"), undefined);
  assert.equal(linkProblem("docs/manifest.md", "#the-lint"), undefined);
  assert.equal(linkProblem("README.md", "https://example.com/x.md#nowhere"), undefined);
  assert.match(linkProblem("README.md", "docs/no_such_page.md") ?? "", /no file docs\/no_such_page\.md/);
  assert.match(linkProblem("docs/manifest.md", "trust.md#no-such-heading") ?? "", /has no heading/);
  assert.match(linkProblem("README.md", "#no-such-heading") ?? "", /README\.md has no heading/);
  assert.deepEqual(links("`[a](b)`\n```\n[c](d)\n```\n[e](f)\n"), [{ line: 5, target: "f" }]);
});

Deno.test("README and docs: every page longer than a screen opens with a table of contents", () => {
  const problems = PAGES.flatMap((page) => tocProblems(pageText(page), page));
  assert.deepEqual(problems, [], problems.join("\n"));
  // And the check finds a missing one.
  const long = "# t\n\n## A\n" + "text\n".repeat(SCREEN_LINES);
  assert.equal(tocProblems(long, "t.md").length, 1);
});

Deno.test("docs harness: a host program is found where a line starts it, not where a line only names it", () => {
  assert.deepEqual(hostProgramsOf("nats-server -js -p 4222 &"), ["nats-server"]);
  assert.deepEqual(hostProgramsOf("X=1 nats-server -js"), ["nats-server"]);
  assert.deepEqual(hostProgramsOf("true && nats-server -js"), ["nats-server"]);
  assert.deepEqual(hostProgramsOf("apt-get install nats-server"), []);
  assert.deepEqual(hostProgramsOf("echo my-nats-server"), []);
  assert.equal(
    withProgramAt("X=1 nats-server -js &", "nats-server", "/usr/sbin/nats-server"),
    "X=1 /usr/sbin/nats-server -js &",
  );
});

facilityTest("nats", await whyMissing("nats"), {
  name:
    "docs harness: with a user's PATH (no /usr/sbin), docs/pool.md's one-machine block starts nats-server where the pool tests find it",
  fn: () => {
    const page = "docs/pool.md";
    const block = fencedBlocks(pageText(page), page).find((b) =>
      b.lines.some((l) => l.text.startsWith("nats-server -js -a 127.0.0.1"))
    );
    assert.ok(block, "docs/pool.md has its one-machine block");
    const world = { env: { PATH: "/usr/local/bin:/usr/bin:/bin" }, notRun: [], page };
    const lines = commandLines(block).map((source) => ({ source, shell: source.command }));
    const ready = hostProgramsReady(lines, block, world);
    assert.ok(Array.isArray(ready), String(ready));
    const started = ready.find((line) => line.source.command.startsWith("nats-server"));
    assert.equal(started?.shell.split(" ")[0], findHostProgram("nats-server", ""));
    assert.deepEqual(world.notRun, []);
  },
});

facilityTest("nats", await whyMissing("nats"), {
  name:
    "docs/pool.md: the token its one-machine block makes is one nats-server takes, even from bytes whose base64 begins like a number",
  fn: async () => {
    const page = "docs/pool.md";
    const block = fencedBlocks(pageText(page), page).find((b) =>
      b.lines.some((l) => l.text.startsWith("nats-server -js -a 127.0.0.1"))
    );
    assert.ok(block, "docs/pool.md has its one-machine block");
    const line = (start: string) => {
      const found = block.lines.find((l) => l.text.startsWith(start));
      assert.ok(found, `docs/pool.md's block has a line starting ${start}`);
      return found.text.replace(/\s+#.*$/, "");
    };
    const token = line("export NATS_TOKEN=");
    const conf = line("printf 'authorization");
    assert.match(token, /\/dev\/urandom/);
    const dir = await Deno.makeTempDir();
    try {
      // Bytes whose plain base64 is "5m0Wf5XPpL3zL4CrthzGVEVUO+FgE3jZ", a token nats-server refused at start.
      const bytes = Uint8Array.from(atob("5m0Wf5XPpL3zL4CrthzGVEVUO+FgE3jZ"), (c) => c.charCodeAt(0));
      await Deno.writeFile(join(dir, "random"), bytes);
      const script = [
        token.replace("/dev/urandom", join(dir, "random")),
        conf.replace("~/nats-pool.conf", join(dir, "nats.conf")),
        `exec "$1" -c ${join(dir, "nats.conf")} -t`,
      ].join("\n");
      const checked = await new Deno.Command("/bin/sh", {
        args: ["-c", script, "sh", findHostProgram("nats-server", "")!],
        clearEnv: true,
        env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
      }).output();
      const said = new TextDecoder().decode(checked.stderr) + new TextDecoder().decode(checked.stdout);
      assert.equal(checked.code, 0, said);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("docs harness: a block starting a host program that is nowhere is skipped and listed, or fails where required", () => {
  const block = fencedBlocks("```sh\nnats-server -js &\n```\n", "x.md")[0];
  const world = { env: { PATH: "/nowhere" }, notRun: [] as string[], page: "x.md" };
  const lines = commandLines(block).map((source) => ({ source, shell: source.command }));
  const ready = hostProgramsReady(lines, block, world, () => undefined);
  if (isRequired("nats")) {
    assert.equal(
      ready,
      "README and docs: x.md:1: nats-server is not installed here (TOOLGATE_REQUIRE_NATS=1)",
    );
  } else {
    assert.equal(ready, "skip");
    assert.deepEqual(world.notRun, ["x.md:1: the whole block: nats-server is not installed here"]);
  }
});
