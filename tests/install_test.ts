// `deno task install` puts a `toolgate` command on the PATH that works from any folder, on that folder, with the
// built-in belt when the folder has no manifest; if the runtime that installed it is gone, it finds another.
import { sessionStartPath } from "../src/sandbox/session_start.ts";
import { whyMissing } from "./requires.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { shimText } from "../src/build/install.ts";
import { NARROW_MODES } from "../src/build/tune_bundle.ts";
import { TOOL_DENO_FLAGS } from "../tools/deno_flags.ts";
import { REPO, runProgram, writeFiles } from "./support.ts";
import { sessionCookie } from "./console_helpers.ts";
import { connectHttp, spawnHttp, TOKEN } from "./mcp/helpers.ts";
import { hostTest, NO_BWRAP, realTempDir, SCRIPT_FIXTURE } from "./security/helpers.ts";

const CURL = ["/usr/bin/curl", "/bin/curl"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

/** A static import, `import ... from "x"` or `import "x"`, one to a line as the bundler writes them. */
const STATIC = /^import\s*(?:[^;]*?\sfrom\s*)?"([^"]+)";?$/gms;
/** Any import the runtime reads ahead of the first line: static, re-exported, or a literal dynamic one. */
const LOOKED_AHEAD = /(?:from\s*|import\s*|import\()"(\.\.?\/[^"]+\.js)"/g;

/** The files an entry's imports of the kind `pattern` matches reach, all the way down, and the `node:` ones. */
async function imported(
  dir: string,
  entry: string,
  pattern: RegExp = STATIC,
): Promise<{ files: Set<string>; builtins: string[] }> {
  const files = new Set<string>();
  const builtins: string[] = [];
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = await Deno.readTextFile(join(dir, file));
    for (const match of text.matchAll(pattern)) {
      if (match[1].startsWith(".")) pending.push(join(dirname(file), match[1]));
      else if (match[1].startsWith("node:")) builtins.push(`${file}: ${match[1]}`);
    }
  }
  return { files, builtins };
}

/** The files a bundle entry loads before it runs (its static imports, all the way down) and the `node:` ones. */
function staticImports(dir: string, entry: string): Promise<{ files: Set<string>; builtins: string[] }> {
  return imported(dir, entry);
}

/** What the runtime reads before an entry's first line runs: its static imports and literal dynamic ones. */
async function lookAhead(dir: string, entry: string): Promise<Set<string>> {
  return (await imported(dir, entry, LOOKED_AHEAD)).files;
}

Deno.test("install: the installed command runs from any folder, on that folder", async () => {
  const bin = await Deno.makeTempDir();
  const data = await Deno.makeTempDir();
  const state = await Deno.makeTempDir();
  const installed = await runProgram(Deno.execPath(), ["task", "-q", "install", "--bin", bin], {
    cwd: REPO,
    env: { XDG_DATA_HOME: data, XDG_STATE_HOME: state },
  });
  assert.equal(installed.code, 0, installed.stderr);
  assert.equal(installed.stderr, "", "the bundle builds");
  assert.match(installed.stdout, new RegExp(`installed ${join(bin, "toolgate")}`));
  // The session starter, built with the machine's C compiler into the state folder, or the line that says why not.
  const starter = sessionStartPath({ XDG_STATE_HOME: state });
  if (await whyMissing("cc") === undefined) {
    assert.ok(installed.stdout.includes(`session starter: ${starter} (built, `), installed.stdout);
    assert.ok((await Deno.stat(starter)).isFile);
  } else assert.match(installed.stdout, /session starter not built \(no C compiler/);
  // It ends with what to run next: here its folder is not on PATH, so with the line that puts it there first.
  assert.ok(
    installed.stdout.endsWith(`next: export PATH="${bin}:$PATH" && toolgate doctor\n`),
    installed.stdout,
  );
  const info = await Deno.stat(join(bin, "toolgate"));
  assert.ok((info.mode ?? 0) & 0o100, "executable");
  // The command runs the bundle built into the data folder, not the checkout's source files.
  const shim = await Deno.readTextFile(join(bin, "toolgate"));
  assert.ok(shim.includes(join(data, "toolgate", "bundle", "launch.js")), shim);
  assert.ok(!shim.includes(join(REPO, "src")), shim);
  for (const entry of ["launch.js", "main.js"]) {
    // What each entry loads before it runs holds no Node built-in (Deno's Node layer costs a start ~15 ms).
    const loaded = await staticImports(join(data, "toolgate", "bundle"), entry);
    assert.ok(loaded.files.size > 1, `${entry} and its chunks were read`);
    assert.deepEqual(loaded.builtins, [], `${entry} loads Node built-ins at start`);
  }
  // Each built-in tool starts from its own entry, which loads that tool's code and nothing of the command line.
  const main = await staticImports(join(data, "toolgate", "bundle"), "main.js");
  const size = async (files: Set<string>) => {
    let bytes = 0;
    for (const file of files) bytes += (await Deno.stat(join(data, "toolgate", "bundle", file))).size;
    return bytes;
  };
  for (const name of Object.keys(TOOL_DENO_FLAGS)) {
    const tool = await staticImports(join(data, "toolgate", "bundle"), join("belt", `${name}.js`));
    assert.ok(tool.files.size > 1, `belt/${name}.js and its chunks were read`);
    assert.ok(!tool.files.has("main.js"), `belt/${name}.js loads the main entry`);
    if (name === "get_time") {
      assert.deepEqual(tool.builtins, [], "get_time loads Node built-ins at start");
      assert.ok(
        (await size(tool.files)) * 10 < await size(main.files),
        "get_time loads a tenth of main.js or less",
      );
    }
  }
  // The runtime reads, before the first line runs, every file a literal `import("./x.js")` names and all they
  // import: main.js names only the modes a process under a tool's narrow grants loads (it cannot read the bundle
  // to load a hidden one), so what a command reads at start is its own graph, with no heavy package in it.
  const bundle = join(data, "toolgate", "bundle");
  const lookedAhead = await lookAhead(bundle, "main.js");
  const literal = [
    ...(await Deno.readTextFile(join(bundle, "main.js"))).matchAll(/import\("\.\/([^"]+)-[A-Z0-9]+\.js"\)/g),
  ]
    .map((match) => match[1]);
  assert.deepEqual(
    [...new Set(literal)].sort(),
    [...NARROW_MODES].sort(),
    "main.js's literal dynamic imports",
  );
  for (const file of lookedAhead) {
    const text = await Deno.readTextFile(join(bundle, file));
    for (
      const heavy of ["@modelcontextprotocol", "/ajv/", "@peculiar", "/zod/", "@nats-io", "@opentelemetry"]
    ) {
      assert.ok(
        !text.includes(`registry.npmjs.org${heavy.startsWith("/") ? "" : "/"}${heavy}`),
        `${file} (read at every start) holds ${heavy}`,
      );
    }
  }
  // A process under narrow grants never meets a hidden import it would need read access for.
  const narrowEntries = [
    ...(await Deno.readTextFile(join(bundle, "main.js"))).matchAll(/import\("\.\/([^"]+\.js)"\)/g),
  ];
  for (const entry of narrowEntries) {
    for (const file of await lookAhead(bundle, entry[1])) {
      const text = await Deno.readTextFile(join(bundle, file));
      assert.ok(
        !text.includes("import(String("),
        `${file} is loaded under narrow grants but hides an import`,
      );
    }
  }
  const project = await Deno.makeTempDir();
  await Deno.writeTextFile(join(project, "notes.md"), "# notes\n");
  const env = { XDG_STATE_HOME: await Deno.makeTempDir() };
  const call = await runProgram(join(bin, "toolgate"), ["call", "fs_list_dir", '{"path":"."}'], {
    cwd: project,
    env,
  });
  assert.equal(call.code, 0, call.stderr);
  assert.deepEqual(JSON.parse(call.stdout).result.entries.map((e: { name: string }) => e.name), ["notes.md"]);
  const version = await runProgram(join(bin, "toolgate"), ["--version"], { cwd: project, env });
  assert.match(version.stdout, /^toolgate \d+\.\d+\.\d+\n$/);
  // In a checkout of toolgate itself, the installed command agrees with `deno task agent` there: its tools.json is
  // the belt, no trust asked, and its tools run as built in.
  const own = await runProgram(join(bin, "toolgate"), ["call", "fs_list_dir", '{"path":"docs"}'], {
    cwd: REPO,
    env,
  });
  assert.equal(own.code, 0, own.stderr);
  assert.ok(JSON.parse(own.stdout).result.entries.length > 0, own.stdout);
  const agentTask = await runProgram(Deno.execPath(), [
    "task",
    "-q",
    "agent",
    "call",
    "fs_list_dir",
    '{"path":"docs"}',
  ], {
    cwd: REPO,
    env,
  });
  assert.equal(agentTask.code, 0, agentTask.stderr);
  assert.deepEqual(JSON.parse(agentTask.stdout).result, JSON.parse(own.stdout).result);
  // A copy of that layout whose program was swapped runs the built-in tool, never the planted program; one whose
  // tools.json differs is a manifest like any other, to be trusted first.
  const copy = await Deno.makeTempDir();
  const mark = join(copy, "planted-ran");
  await writeFiles(copy, {
    "tools.json": await Deno.readTextFile(join(REPO, "tools.json")),
    "src/manifest/tool_belt.ts": "// a checkout's layout\n",
    "tools/bin/fs_list_dir": `#!/bin/sh\ntouch ${mark}; echo '{}'\n`,
    ".git/HEAD": "ref: refs/heads/main\n",
  });
  await Deno.chmod(join(copy, "tools/bin/fs_list_dir"), 0o755);
  const planted = await runProgram(join(bin, "toolgate"), ["call", "fs_list_dir", "{}", "--sandbox", "off"], {
    cwd: copy,
    env,
  });
  assert.equal(planted.code, 0, planted.stderr);
  assert.ok(JSON.parse(planted.stdout).result.entries.some((e: { name: string }) => e.name === "tools.json"));
  await assert.rejects(Deno.stat(mark), Deno.errors.NotFound, "the planted program ran");
  const text = JSON.parse(await Deno.readTextFile(join(copy, "tools.json")));
  text.tools[0].description += " (changed)";
  await writeFiles(copy, { "tools.json": text });
  const changed = await runProgram(join(bin, "toolgate"), ["call", "fs_list_dir", "{}", "--sandbox", "off"], {
    cwd: copy,
    env,
  });
  assert.equal(changed.code, 1, changed.stdout);
  assert.match(JSON.parse(changed.stdout).message, /not trusted yet/);
  await assert.rejects(Deno.stat(mark), Deno.errors.NotFound, "the planted program ran");
  // The bundle carries the console's script and style, files of their own, and the command serves them as they are.
  const server = await spawnHttp(
    join(bin, "toolgate"),
    ["serve", "--http", "0", "--console", "0", "--sandbox", "off", "--cwd", project],
    { ...env, TOOLGATE_MCP_TOKEN: TOKEN },
  );
  try {
    const found = /console at (http:\/\/\S+)/.exec(server.stderr());
    assert.ok(found, server.stderr());
    const link = new URL(found[1]);
    const cookie = await sessionCookie(link);
    for (const [path, file] of [["/console.js", "page_script.js"], ["/console.css", "page_style.css"]]) {
      const served: Response = await fetch(new URL(path, link), { headers: { cookie } });
      assert.equal(served.status, 200, path);
      assert.equal(await served.text(), await Deno.readTextFile(join(REPO, "src", "console", file)), path);
    }
    // The bundle starts serve's tools from the spawn thread, whose worker runs from its own source text.
    await using connected = await connectHttp(server.url, TOKEN);
    const read = await connected.client.callTool({ name: "fs_read_file", arguments: { path: "notes.md" } });
    assert.equal(read.isError, undefined, JSON.stringify(read));
    assert.match(JSON.stringify(read.content), /# notes/);
  } finally {
    await server.stop();
  }
});

Deno.test("install: when the runtime that installed it is gone, the command uses deno from PATH", async () => {
  const bin = await Deno.makeTempDir();
  await Deno.writeTextFile(
    join(bin, "toolgate"),
    shimText("/nonexistent/deno", { source: REPO.replace(/\/$/, "") }, "2.9.6"),
    {
      mode: 0o755,
    },
  );
  const path = await Deno.makeTempDir();
  await Deno.symlink(Deno.execPath(), join(path, "deno"));
  const project = await Deno.makeTempDir();
  const call = await runProgram(join(bin, "toolgate"), ["call", "get_time", '{"timezone":"UTC"}'], {
    cwd: project,
    env: { PATH: `${path}:/usr/bin:/bin`, XDG_STATE_HOME: await Deno.makeTempDir() },
  });
  assert.equal(call.code, 0, call.stderr);
  assert.equal(JSON.parse(call.stdout).result.timezone, "UTC");
});

hostTest(
  "install: the installed command runs when its parent left nothing open past stderr, with no bash step; one left open on 42 takes it",
  await whyMissing("bash"),
  async () => {
    // Its shell reads the script on a descriptor of 10 or above that closes on exec: no reason to close anything.
    // A `bash` first on PATH notes each start, so the step is seen (the installed command finds bash by PATH).
    const bin = await realTempDir();
    await Deno.writeTextFile(
      join(bin, "toolgate"),
      shimText(Deno.execPath(), { source: REPO.replace(/\/$/, "") }, "2.9.6"),
      { mode: 0o755 },
    );
    const spy = await realTempDir();
    const bash = (await runProgram("/bin/sh", ["-c", "command -v bash"])).stdout.trim();
    await Deno.writeTextFile(
      join(spy, "bash"),
      `#!/bin/sh\necho started >> ${spy}/starts\nexec ${bash} "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const project = await realTempDir();
    const env = { PATH: `${spy}:/usr/local/bin:/usr/bin:/bin`, XDG_STATE_HOME: await realTempDir() };
    // A parent that closes every descriptor past stderr (as most do) before it starts the command, or opens 42.
    const closeAll = 'for fd in /proc/self/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; ';
    const call = (opened: string) =>
      runProgram(bash, [
        "-c",
        `${closeAll}${opened}exec "$@"`,
        "-",
        join(bin, "toolgate"),
        "call",
        "get_time",
        `{"timezone":"UTC"}`,
      ], {
        cwd: project,
        env,
      });
    const starts = async () =>
      (await Deno.readTextFile(join(spy, "starts")).catch(() => "")).split("\n").length - 1;
    const clean = await call("");
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(JSON.parse(clean.stdout).tool, "get_time", clean.stdout);
    assert.equal(await starts(), 0);
    const left = await call(`exec 42<"${project}"; `);
    assert.equal(left.code, 0, left.stderr);
    assert.equal(JSON.parse(left.stdout).tool, "get_time", left.stdout);
    assert.equal(await starts(), 1);
  },
  "bash",
);

hostTest(
  "install: the installed command's egress bridge runs inside the sandbox under a tool's narrow grants",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    // The bridge is the one mode the bundle's main entry runs without read access to the bundle: what it loads
    // must be named where the runtime looks ahead (src/build/tune_bundle.ts), or it cannot load at all.
    const http = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("listed-ok"),
    );
    try {
      const bin = await realTempDir();
      const data = await realTempDir();
      const installed = await runProgram(Deno.execPath(), ["task", "-q", "install", "--bin", bin], {
        cwd: REPO,
        env: { XDG_DATA_HOME: data, XDG_STATE_HOME: await Deno.makeTempDir() },
      });
      assert.equal(installed.code, 0, installed.stderr);
      const dir = await realTempDir();
      await writeFiles(dir, {
        "tools.json": {
          tools: [{
            name: "fetcher",
            command: ["./tools/bin/run_script"],
            permissions: { net: [`127.0.0.1:${http.addr.port}`] },
          }],
        },
        "tools/bin/run_script": await Deno.readTextFile(
          join(SCRIPT_FIXTURE, "..", "tools", "bin", "run_script"),
        ),
      });
      const env = { XDG_STATE_HOME: await realTempDir(), XDG_DATA_HOME: data };
      const trusted = await runProgram(join(bin, "toolgate"), ["trust"], { cwd: dir, env });
      assert.equal(trusted.code, 0, trusted.stderr);
      const script = `curl -s -m 5 http://127.0.0.1:${http.addr.port}/plain`;
      const call = await runProgram(join(bin, "toolgate"), ["call", "fetcher", JSON.stringify({ script })], {
        cwd: dir,
        env,
      });
      assert.equal(call.code, 0, call.stderr);
      assert.match(JSON.parse(call.stdout).result.out, /listed-ok/, call.stdout);
    } finally {
      await http.shutdown();
    }
  },
);
