// toolgate reads options itself (node:util costs start-up time): what it reads must be what node:util's
// parseArgs reads in strict mode, and each mistake must still be a usage error.
import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { type Command, GLOBAL_OPTIONS, parseCommandArgs, UsageError } from "../src/commands/cli.ts";

const command: Command = {
  name: "demo",
  summary: "a command for this test",
  usage: "toolgate demo",
  options: {
    cwd: { type: "string", help: "a string" },
    "allow-tools": { type: "string", multiple: true, help: "many strings" },
    yes: { type: "boolean", short: "y", help: "a flag" },
    quiet: { type: "boolean", short: "q", help: "a flag" },
    model: { type: "string", short: "m", help: "a string with a short name" },
  },
  run: () => Promise.resolve(0),
};

const specs = { ...GLOBAL_OPTIONS, ...command.options };
const nodeOptions = Object.fromEntries(
  Object.entries(specs).map(([name, spec]) => [
    name,
    { type: spec.type, multiple: spec.multiple ?? false, ...(spec.short ? { short: spec.short } : {}) },
  ]),
);

const ACCEPTED: string[][] = [
  [],
  ["a", "b"],
  ["--cwd", "x", "pos"],
  ["--cwd=x", "--cwd=", "pos"],
  ["--cwd", "-"],
  ["--yes", "-q", "-yq", "p1", "--", "--cwd", "-y"],
  ["--allow-tools", "a", "--allow-tools=b", "c"],
  ["-m", "gpt", "-mgpt2", "-qm", "m3"],
  ["-", "--help", "-h", "--version", "--locked"],
  ["--tools", "t.json", "--allow-absolute-commands"],
];

Deno.test("cli: options and positionals are read as node:util's parseArgs reads them", () => {
  for (const args of ACCEPTED) {
    const expected = parseArgs({ args, options: nodeOptions, allowPositionals: true, strict: true });
    const ours = parseCommandArgs(args, command);
    assert.deepEqual(ours.positionals, expected.positionals, args.join(" "));
    assert.deepEqual({ ...ours.values }, { ...expected.values }, args.join(" "));
  }
});

const REFUSED: [string[], RegExp][] = [
  [["--bogus"], /^unknown option --bogus$/],
  [["--bogus=1"], /^unknown option --bogus$/],
  [["-x"], /^unknown option -x$/],
  [["-bogus"], /^unknown option -bogus$/],
  [["--cwd"], /^option --cwd needs a value$/],
  [
    ["--cwd", "--yes"],
    /^option --cwd needs a value \(a value that starts with a dash is written --cwd=-VALUE\)$/,
  ],
  [["-m"], /^option --model needs a value$/],
  [["--yes=1"], /^option --yes takes no value$/],
];

Deno.test("cli: every mistake node:util's parseArgs refuses is a usage error naming the option", () => {
  for (const [args, message] of REFUSED) {
    assert.throws(() => parseArgs({ args, options: nodeOptions, allowPositionals: true, strict: true }));
    assert.throws(() => parseCommandArgs(args, command), (error: unknown) => {
      assert.ok(error instanceof UsageError, String(error));
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("cli: --console takes its port or none (a free one), and a bare --console leaves the next option alone", async () => {
  const { serveCommand } = await import("../src/commands/serve.ts");
  const { consolePort } = await import("../src/commands/console_option.ts");
  const read = (args: string[]) => {
    const parsed = parseCommandArgs(args, serveCommand);
    return consolePort(parsed, "serve");
  };
  assert.equal(read(["--console"]), 0);
  assert.equal(read(["--console", "8766"]), 8766);
  assert.equal(read(["--console=8767"]), 8767);
  assert.equal(read(["--console", "--http", "8765"]), 0);
  assert.equal(read(["--http", "8765"]), undefined);
  assert.throws(() => read(["--console", "70000"]), UsageError);
});
