/**
 * Trust covers a server's own code (issue 38): the files a tool's or an MCP server's command line names (a script,
 * an argument file, a folder, a `python -m` package) are pinned with the manifest, so a rewritten one makes the
 * manifest untrusted again, shows as what changed, and runs nothing until the user trusts it; the prompt lists
 * the code covered and what no digest can cover. Real processes throughout: the launcher as `toolgate` runs, a
 * stdio MCP server of the test's own written in Python's standard library.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { asEnvelope } from "../../src/contract.ts";
import { cliArgs, GRANTS, runToolgate, writeFiles } from "../support.ts";
import { realTempDir } from "./helpers.ts";

const PYTHON = "/usr/bin/python3";

/** A workspace, toolgate's state in a folder of the test's own, and a marks file outside both. */
interface World extends AsyncDisposable {
  readonly workspace: string;
  readonly env: Record<string, string>;
  /** Each start of a server or tool appends a line here. */
  readonly marks: string;
}

async function world(): Promise<World> {
  const workspace = await realTempDir("toolgate_trust_code_ws_");
  const outside = await realTempDir("toolgate_trust_code_out_");
  const home = await realTempDir("toolgate_trust_code_home_");
  return {
    workspace,
    marks: join(outside, "marks"),
    // `python3` is looked up on this PATH, as a host's configuration names it.
    env: {
      XDG_STATE_HOME: join(home, "state"),
      XDG_CONFIG_HOME: join(home, "config"),
      TOOLGATE_TOOLS: "",
      PATH: "/usr/bin:/bin",
    },
    [Symbol.asyncDispose]: async () => {
      for (const dir of [workspace, outside, home]) await Deno.remove(dir, { recursive: true });
    },
  };
}

function toolgate(w: World, args: readonly string[]) {
  return runToolgate(args, w.workspace, w.env);
}

async function marks(w: World): Promise<string[]> {
  try {
    return (await Deno.readTextFile(w.marks)).trim().split("\n").filter((line) => line !== "");
  } catch {
    return [];
  }
}

/**
 * A stdio MCP server in Python's standard library: it appends `started VERSION` to `marks` when it starts (where
 * it may write it: unconfined), and
 * its one tool `hello` answers `hello from VERSION` (the version read from `version_of()`, which `helper` names
 * when given: a module beside it). `once`: it ends after its first call (the next call starts it again).
 */
function pythonServer(marks: string, version: string, helper?: string, once = false): string {
  const versionOf = helper === undefined
    ? `def version_of():\n    return ${JSON.stringify(version)}\n`
    : `from ${helper} import version_of\n`;
  return `import json, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
${versionOf}
try:
    with open(${JSON.stringify(marks)}, "a") as f:
        f.write("started " + version_of() + "\\n")
except OSError:
    pass  # confined (as \`toolgate trust\` starts it), the marks file is out of its reach
def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()
for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "own", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "hello", "description": "Says hello.",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "hello from " + version_of()}]}
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": ident, "result": result})
    if ${once ? "True" : "False"} and method == "tools/call":
        sys.exit(0)
`;
}

/** `call NAME {}` here, unconfined; its envelope and stderr. */
async function call(w: World, name: string) {
  const run = await toolgate(w, ["call", name, "{}", "--sandbox", "off"]);
  const lines = run.stdout.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one envelope line: ${run.stdout}\n${run.stderr}`);
  const envelope = asEnvelope(JSON.parse(lines[0]));
  assert.ok(envelope !== undefined, run.stdout);
  return { code: run.code, envelope, stderr: run.stderr, raw: lines[0] };
}

/** `call NAME {}` must be refused by the trust gate (a `rejected` envelope naming `toolgate trust`); its stderr. */
async function assertRefused(w: World, name: string): Promise<string> {
  const before = (await marks(w)).length;
  const { code, envelope, stderr } = await call(w, name);
  assert.equal(code, 1, stderr);
  assert.ok(envelope.ok === false, JSON.stringify(envelope));
  assert.equal(envelope.kind, "rejected");
  assert.match(envelope.message, /`toolgate trust`/);
  assert.equal((await marks(w)).length, before, "the server or tool started before it was trusted again");
  return stderr;
}

/** A successful `call`'s envelope line (an upstream tool's text is in its content, a manifest tool's in its result). */
async function answered(w: World, name: string): Promise<string> {
  const { code, envelope, stderr, raw } = await call(w, name);
  assert.equal(code, 0, raw + stderr);
  assert.ok(envelope.ok, raw);
  return raw;
}

Deno.test("trust code: a trusted server's script (python3 ./srv.py) rewritten is caught; it does not start until trusted again", async () => {
  await using w = await world();
  await writeFiles(w.workspace, {
    "tools.json": { tools: [], mcpServers: { srv: { command: "python3", args: ["./srv.py"] } } },
    "srv.py": pythonServer(w.marks, "v1"),
  });
  const trust = await toolgate(w, ["trust"]);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  // The prompt lists the server's code, and says what no digest covers.
  assert.match(
    trust.stdout,
    /^ {2}server srv: \["python3","\.\/srv\.py"\], profile none \(writes nothing; no network\), code srv\.py$/m,
  );
  assert.match(trust.stdout, /not covered: code loaded from elsewhere at run time \(the interpreter/);
  assert.match(await answered(w, "mcp__srv__hello"), /hello from v1/);

  await writeFiles(w.workspace, { "srv.py": pythonServer(w.marks, "v2") });
  const stderr = await assertRefused(w, "mcp__srv__hello");
  assert.match(stderr, /tools\.json changed since you trusted it/);
  assert.match(stderr, /^ {2}~ code srv\.py changed \(run by server srv\)$/m);
  assert.match(stderr, /not covered: code loaded from elsewhere at run time/);
  assert.ok(!(await marks(w)).includes("started v2"), "the rewritten server ran");

  const again = await toolgate(w, ["trust"]);
  assert.equal(again.code, 0, again.stdout + again.stderr);
  assert.doesNotMatch(again.stdout, /unchanged/);
  assert.match(
    again.stdout,
    /changed since you trusted it .*:\n {2}~ code srv\.py changed \(run by server srv\)/,
  );
  assert.match(await answered(w, "mcp__srv__hello"), /hello from v2/);
});

Deno.test("trust code: a file in a server's folder argument (python3 ./srvpkg) rewritten is caught", async () => {
  await using w = await world();
  await writeFiles(w.workspace, {
    "tools.json": { tools: [], mcpServers: { pkg: { command: "python3", args: ["./srvpkg"] } } },
    "srvpkg/__main__.py": pythonServer(w.marks, "", "helper"),
    "srvpkg/helper.py": 'def version_of():\n    return "v1"\n',
    // Installed packages and caches are not the server's own code: left out of the digest.
    "srvpkg/node_modules/dep/index.js": "1",
  });
  const trust = await toolgate(w, ["trust"]);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  assert.match(
    trust.stdout,
    /^ {2}server pkg: \["python3","\.\/srvpkg"\], profile none \(writes nothing; no network\), code srvpkg\/ \(2 files\)$/m,
  );
  assert.match(await answered(w, "mcp__pkg__hello"), /hello from v1/);
  // What the package leaves out may change: nothing to trust again.
  await writeFiles(w.workspace, { "srvpkg/node_modules/dep/index.js": "2" });
  assert.match(await answered(w, "mcp__pkg__hello"), /hello from v1/);

  await writeFiles(w.workspace, { "srvpkg/helper.py": 'def version_of():\n    return "v2"\n' });
  const stderr = await assertRefused(w, "mcp__pkg__hello");
  assert.match(stderr, /^ {2}~ code srvpkg\/helper\.py changed \(run by server pkg\)$/m);
  // A file added to the folder is a change too.
  assert.equal((await toolgate(w, ["trust"])).code, 0);
  await writeFiles(w.workspace, { "srvpkg/extra.py": "x = 1\n" });
  assert.match(await assertRefused(w, "mcp__pkg__hello"), /^ {2}\+ code srvpkg\/extra\.py added/m);
});

Deno.test("trust code: a tool's script, its argument file and its python -m package rewritten are each caught and named", async () => {
  await using w = await world();
  const program = `#!/bin/sh\necho "tool $*" >> ${w.marks}\nexec ${PYTHON} "$@"\n`;
  await writeFiles(w.workspace, {
    "tools.json": {
      tools: [
        { name: "t", command: ["./tools/bin/py", "./scripts/tool.py", "./conf/data.json"], readOnly: true },
        { name: "m", command: ["./tools/bin/py", "-m", "pkg.main"], readOnly: true },
      ],
    },
    "tools/bin/py": program,
    "scripts/tool.py": "import json, sys\nprint(json.dumps(json.load(open(sys.argv[1]))))\n",
    "conf/data.json": { answer: 1 },
    "pkg/__init__.py": "",
    "pkg/main.py": "from pkg.util import answer\nimport json\nprint(json.dumps({'answer': answer}))\n",
    "pkg/util.py": "answer = 1\n",
  });
  await Deno.chmod(join(w.workspace, "tools/bin/py"), 0o755);
  const trust = await toolgate(w, ["trust"]);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  assert.match(trust.stdout, /^ {2}t: .*, code scripts\/tool\.py, conf\/data\.json$/m);
  assert.match(trust.stdout, /^ {2}m: .*, code pkg\/ \(3 files\)$/m);
  assert.match(await answered(w, "t"), /"answer":1/);
  assert.match(await answered(w, "m"), /"answer":1/);

  const cases: [string, string, string, string][] = [
    ["t", "scripts/tool.py", "import sys\nprint('{\"answer\": 2}')\n", "tool t"],
    ["t", "conf/data.json", '{"answer": 2}', "tool t"],
    ["m", "pkg/util.py", "answer = 2\n", "tool m"],
  ];
  for (const [tool, file, text, owner] of cases) {
    await writeFiles(w.workspace, { [file]: text });
    const stderr = await assertRefused(w, tool);
    assert.ok(
      stderr.includes(`  ~ code ${file} changed (run by ${owner})`),
      `${file}: ${stderr}`,
    );
    const again = await toolgate(w, ["trust"]);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(await answered(w, tool), /"answer":2/);
  }
});

Deno.test("trust code: a tool's script rewritten while serve runs is not run", async () => {
  await using w = await world();
  await writeFiles(w.workspace, {
    "tools.json": {
      tools: [{ name: "t", command: ["./tools/bin/py", "./scripts/tool.py"], readOnly: true }],
    },
    "tools/bin/py": `#!/bin/sh\nexec ${PYTHON} "$@"\n`,
    "scripts/tool.py": "print('{\"n\": 1}')\n",
  });
  await Deno.chmod(join(w.workspace, "tools/bin/py"), 0o755);
  assert.equal((await toolgate(w, ["trust"])).code, 0);
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: cliArgs(GRANTS.broad, ["serve", "--no-audit", "--sandbox", "off"]),
    cwd: w.workspace,
    env: { HOME: Deno.env.get("HOME") ?? "/root", ...w.env },
    stderr: "pipe",
  });
  const client = new Client({ name: "toolgate-trust-code-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const first = await client.callTool({ name: "t", arguments: {} });
    assert.deepEqual(first.structuredContent, { n: 1 });
    await Deno.writeTextFile(join(w.workspace, "scripts/tool.py"), `open(${JSON.stringify(w.marks)}, "w")\n`);
    const rewritten = await client.callTool({ name: "t", arguments: {} });
    assert.equal(rewritten.isError, true);
    const envelope = rewritten.structuredContent as Record<string, unknown>;
    assert.equal(envelope.kind, "rejected");
    assert.match(String(envelope.message), /code .*scripts\/tool\.py is not what the user trusted/);
    assert.deepEqual(await marks(w), [], "the rewritten script ran");
  } finally {
    await client.close();
  }
});

Deno.test("trust code: a server's script rewritten while serve runs is not started again", async () => {
  await using w = await world();
  await writeFiles(w.workspace, {
    "tools.json": { tools: [], mcpServers: { srv: { command: "python3", args: ["./srv.py"] } } },
    "srv.py": pythonServer(w.marks, "v1", undefined, true),
  });
  assert.equal((await toolgate(w, ["trust"])).code, 0);
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: cliArgs(GRANTS.broad, [
      "serve",
      "--no-audit",
      "--sandbox",
      "off",
      "--allow-tools",
      "mcp__srv__hello",
    ]),
    cwd: w.workspace,
    env: { HOME: Deno.env.get("HOME") ?? "/root", ...w.env },
    stderr: "pipe",
  });
  const client = new Client({ name: "toolgate-trust-code-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const first = await client.callTool({ name: "mcp__srv__hello", arguments: {} });
    assert.match(JSON.stringify(first.content), /hello from v1/);
    // The server ended after its call; its script is rewritten before the next call starts it again.
    await writeFiles(w.workspace, { "srv.py": pythonServer(w.marks, "v2", undefined, true) });
    // A call that reaches the server while it ends fails another way (it ended, a broken pipe): once toolgate has
    // seen it end, the next call starts it again, which is where the check is.
    let next = await client.callTool({ name: "mcp__srv__hello", arguments: {} });
    for (let tries = 0; tries < 20 && !JSON.stringify(next).includes("not what the user trusted"); tries++) {
      assert.equal(next.isError, true, `the rewritten server answered: ${JSON.stringify(next)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      next = await client.callTool({ name: "mcp__srv__hello", arguments: {} });
    }
    assert.equal(next.isError, true, JSON.stringify(next));
    assert.match(JSON.stringify(next), /server's code .*srv\.py is not what the user trusted/);
    assert.ok(!(await marks(w)).includes("started v2"), "the rewritten server ran");
  } finally {
    await client.close();
  }
});

Deno.test("trust code: a folder a server serves (named in its args, and its profile writes it) is its data: edited, the server still runs; a script beside it stays pinned", async () => {
  await using w = await world();
  const notes = join(w.workspace, "notes");
  await writeFiles(w.workspace, {
    "tools.json": {
      tools: [],
      mcpServers: {
        srv: { command: "python3", args: ["./srv.py", notes], permissions: { write: [notes] } },
      },
    },
    "srv.py": pythonServer(w.marks, "v1"),
    "notes/a.txt": "first\n",
  });
  // Unconfined, as its calls run: a server whose profile writes does not run unconfined unless told to.
  const trust = await toolgate(w, ["trust", "--sandbox", "off"]);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  assert.match(trust.stdout, /notes\/? \(its profile may write it: data, not pinned\)/);
  assert.match(await answered(w, "mcp__srv__hello"), /hello from v1/);
  // The server's data changes as the server (or its user) works: no trust to give again.
  await writeFiles(w.workspace, { "notes/a.txt": "second\n", "notes/b.txt": "new\n" });
  assert.match(await answered(w, "mcp__srv__hello"), /hello from v1/);
  // Its script is still code.
  await writeFiles(w.workspace, { "srv.py": pythonServer(w.marks, "v2") });
  assert.match(
    await assertRefused(w, "mcp__srv__hello"),
    /^ {2}~ code srv\.py changed \(run by server srv\)$/m,
  );
});
