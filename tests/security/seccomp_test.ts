// The seccomp filter under bubblewrap (issue 41): an escape corpus of raw syscalls (tests/fixtures/seccomp/
// escape_probe.c, compiled here with gcc) run as a confined tool, each refused by its cause (EPERM from the
// filter, ENOSYS for clone3, the process killed for another ABI), and the real tools a user runs working under it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { FIXTURES } from "../support.ts";
import { confinedTest, hostTest, NO_BWRAP, realTempDir, runScript, scriptExecutor } from "./helpers.ts";

const PROBE_SOURCE = join(FIXTURES, "seccomp", "escape_probe.c");

function hasProgram(name: string): boolean {
  for (const dir of ["/usr/bin", "/bin", "/usr/local/bin"]) {
    try {
      if (Deno.statSync(join(dir, name)).isFile) return true;
    } catch {
      // Not in this one.
    }
  }
  return false;
}

const NO_GCC = NO_BWRAP ?? (hasProgram("gcc") ? undefined : "no gcc to build the escape corpus");

/** A workspace holding the compiled escape corpus as `./escape_probe`. */
async function probeWorkspace(): Promise<string> {
  const workspace = await realTempDir("toolgate_seccomp_");
  const built = await new Deno.Command("gcc", {
    args: ["-O1", "-o", join(workspace, "escape_probe"), PROBE_SOURCE],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(built.success, new TextDecoder().decode(built.stderr));
  return workspace;
}

/** `name:RESULT` pairs printed by the probe. */
function results(out: string): Map<string, string> {
  return new Map([...out.matchAll(/(\w+):(\S+)/g)].map((m) => [m[1], m[2]]));
}

/** What the corpus allows on purpose; every other attempt must be refused with EPERM. */
const NOT_REFUSED: Record<string, string> = {
  seccomp: "on",
  clone_plain_fork: "ok",
  personality_query: "ok",
  clone3: "ENOSYS",
};

for (const tool of ["script_none", "script_network"]) {
  hostTest(
    `seccomp: ${tool}: the escape corpus's syscalls are refused with EPERM (clone3 with ENOSYS) inside the sandbox`,
    NO_GCC,
    async () => {
      const workspace = await probeWorkspace();
      const executor = await scriptExecutor(workspace);
      const result = await runScript(executor, tool, "./escape_probe");
      const seen = results(result.out);
      assert.equal(seen.get("seccomp"), "on", result.out);
      const refused = [...seen].filter(([name]) => !(name in NOT_REFUSED));
      assert.ok(refused.length >= 60, `only ${refused.length} attempts ran: ${result.out}`);
      for (const [name, outcome] of refused) assert.equal(outcome, "EPERM", `${name} (${result.out})`);
      for (const [name, outcome] of Object.entries(NOT_REFUSED)) assert.equal(seen.get(name), outcome, name);
    },
  );
}

hostTest(
  "seccomp: a syscall made under another ABI (i386's int 0x80, x32) kills the tool's process",
  NO_GCC ?? (Deno.build.arch === "x86_64" ? undefined : "the i386 and x32 ABIs are x86_64's"),
  async () => {
    const workspace = await probeWorkspace();
    const executor = await scriptExecutor(workspace);
    for (const abi of ["int80", "x32"]) {
      const result = await runScript(executor, "script_none", `./escape_probe ${abi}; echo status=$?`);
      // 128 + SIGSYS: killed by the filter, before the call could print that it survived.
      assert.match(result.out, /status=159/, result.out);
      assert.doesNotMatch(result.out, /survived/);
    }
  },
);

hostTest(
  "seccomp: without network a tool gets no socket but AF_UNIX; with network TCP, UDP and NETLINK_ROUTE work",
  NO_GCC,
  async () => {
    const workspace = await probeWorkspace();
    const executor = await scriptExecutor(workspace);
    const closed = results((await runScript(executor, "script_none", "./escape_probe net")).out);
    const open = results((await runScript(executor, "script_network", "./escape_probe net")).out);
    for (const name of ["socket_inet_stream", "socket_inet6_dgram", "socket_netlink_route"]) {
      assert.equal(closed.get(name), "EPERM", name);
      assert.equal(open.get(name), "ok", name);
    }
    for (const name of ["socket_unix", "socketpair_unix"]) {
      assert.equal(closed.get(name), "ok", name);
      assert.equal(open.get(name), "ok", name);
    }
  },
);

hostTest(
  "seccomp: the filter's file is not left open inside the sandbox, and its copy in toolgate's state is read-only",
  NO_GCC,
  async () => {
    const workspace = await probeWorkspace();
    const home = await realTempDir("toolgate_seccomp_home_");
    const executor = await scriptExecutor(workspace, {
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home },
    });
    const result = await runScript(executor, "script_none", "./escape_probe fd; ls -l /proc/self/fd");
    assert.match(result.out, /fd3:closed/, result.out);
    assert.doesNotMatch(result.out, /seccomp-/);
    const files: string[] = [];
    for await (const entry of Deno.readDir(join(home, ".local", "state", "toolgate", "seccomp"))) {
      files.push(entry.name);
    }
    assert.equal(files.length, 1, files.join(" "));
    const mode = Deno.statSync(join(home, ".local", "state", "toolgate", "seccomp", files[0])).mode! & 0o777;
    assert.equal(mode, 0o444);
  },
);

/** What a real tool does under the filter: the program, files it runs, and the script that exercises it. */
const REAL_TOOLS: readonly {
  name: string;
  program: string;
  files?: Record<string, string>;
  script: string;
  expect: RegExp;
}[] = [
  {
    name: "Python (threads, a subprocess)",
    program: "python3",
    files: {
      "threads.py": "import threading, subprocess\n" +
        "t = threading.Thread(target=print, args=(7,))\nt.start()\nt.join()\n" +
        "print(subprocess.run(['echo', 'py'], capture_output=True, text=True).stdout.strip())\n",
    },
    script: "/usr/bin/python3 threads.py",
    expect: /7 py/,
  },
  {
    name: "Node (worker threads, a child process)",
    program: "node",
    files: {
      "workers.js": "const { Worker, isMainThread, parentPort } = require('worker_threads');\n" +
        "if (isMainThread) {\n" +
        "  new Worker(__filename).on('message', (m) =>\n" +
        "    console.log('worker', m, require('child_process').execSync('echo child').toString().trim()));\n" +
        "} else parentPort.postMessage(42);\n",
    },
    script: "node workers.js",
    expect: /worker 42 child/,
  },
  {
    name: "Deno (a worker)",
    program: "deno",
    files: {
      "main.ts": "const w = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });\n" +
        "w.onmessage = (e) => { console.log('deno', e.data); w.terminate(); };\n",
      "worker.ts": "postMessage(6 * 7);\n",
    },
    // The Deno that runs these tests, copied into the workspace: on CI it lives under a home the sandbox hides.
    script: "DENO_DIR=$PWD/.deno ./deno run --quiet --allow-read main.ts",
    expect: /deno 42/,
  },
  {
    name: "git",
    program: "git",
    script: "git init -q repo && cd repo && echo hi > f && git add f && " +
      "git -c user.name=t -c user.email=t@t commit -qm one && echo commits=$(git log --oneline | wc -l)",
    expect: /commits=1/,
  },
  {
    name: "a C compiler",
    program: "gcc",
    files: { "m.c": "int main(void) { return 42; }\n" },
    script: "gcc -o m m.c && ./m; echo cc=$?",
    expect: /cc=42/,
  },
  {
    name: "npm install of a local package",
    program: "npm",
    files: { "pkg/package.json": '{"name":"demo","version":"1.0.0"}', "app/package.json": "{}" },
    script:
      "cd app && npm_config_cache=$PWD/.npm npm install --offline --no-audit --no-fund ../pkg >/dev/null && " +
      "node -p 'require(`demo/package.json`).version'",
    expect: /1\.0\.0/,
  },
  {
    name: "pip install of a local wheel",
    program: "python3",
    files: { "mkwheel.py": "" },
    script:
      "/usr/bin/python3 mkwheel.py && PIP_DISABLE_PIP_VERSION_CHECK=1 /usr/bin/python3 -m pip install " +
      "--no-index --no-cache-dir --no-deps --target site demo-1.0-py3-none-any.whl >/dev/null && " +
      "PYTHONPATH=site /usr/bin/python3 -c 'import demo; print(demo.VALUE)'",
    expect: /wheel-ok/,
  },
];

/** A script that writes a minimal wheel (no build tools needed), for the pip line above. */
const MKWHEEL = `import zipfile, hashlib, base64
files = {
  "demo/__init__.py": "VALUE = 'wheel-ok'\\n",
  "demo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: demo\\nVersion: 1.0\\n",
  "demo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(text):
  return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
record = "".join(f"{name},sha256={digest(text)},{len(text.encode())}\\n" for name, text in files.items())
record += "demo-1.0.dist-info/RECORD,,\\n"
with zipfile.ZipFile("demo-1.0-py3-none-any.whl", "w") as wheel:
  for name, text in files.items():
    wheel.writestr(name, text)
  wheel.writestr("demo-1.0.dist-info/RECORD", record)
`;

for (const tool of REAL_TOOLS) {
  hostTest(
    `seccomp: ${tool.name} works under the filter`,
    NO_BWRAP ?? (tool.program === "deno" || hasProgram(tool.program) ? undefined : `no ${tool.program} here`),
    async () => {
      const workspace = await realTempDir("toolgate_seccomp_tools_");
      if (tool.program === "deno") Deno.copyFileSync(Deno.execPath(), join(workspace, "deno"));
      for (const [name, text] of Object.entries(tool.files ?? {})) {
        Deno.mkdirSync(join(workspace, name, ".."), { recursive: true });
        Deno.writeTextFileSync(join(workspace, name), name === "mkwheel.py" ? MKWHEEL : text);
      }
      const executor = await scriptExecutor(workspace);
      const result = await runScript(
        executor,
        "script_workspace",
        `grep -q 'Seccomp:.2' /proc/self/status && echo filtered; ${tool.script}`,
      );
      assert.match(result.out, /filtered/, result.out);
      assert.match(result.out, tool.expect, result.out);
      assert.equal(result.status, 0, result.out);
    },
  );
}

confinedTest("seccomp: the built-in belt runs under the filter", async () => {
  const workspace = await realTempDir("toolgate_seccomp_belt_");
  Deno.writeTextFileSync(join(workspace, "note.txt"), "under the filter\n");
  const executor = await scriptExecutor(workspace, {}, join(FIXTURES, "..", "..", "tools.json"));
  const read = await executor.call("fs_read_file", JSON.stringify({ path: "note.txt" }));
  assert.ok(read.ok, JSON.stringify(read));
  assert.match(JSON.stringify(read.result), /under the filter/);
  // The belt's runtime and what it starts hold the filter: a program run by `exec` reads it in its status.
  const ran = await executor.call(
    "exec",
    JSON.stringify({ argv: ["grep", "Seccomp:", "/proc/self/status"] }),
  );
  assert.ok(ran.ok, JSON.stringify(ran));
  assert.match(JSON.stringify(ran.result), /Seccomp:\\t2/);
});

confinedTest(
  "seccomp: a call the filter refused says so to the model; another failure does not",
  async () => {
    const workspace = await realTempDir("toolgate_seccomp_note_");
    const executor = await scriptExecutor(workspace, {}, join(FIXTURES, "..", "..", "tools.json"));
    const refused = await executor.call("exec", JSON.stringify({ argv: ["unshare", "-U", "true"] }));
    assert.ok(refused.ok, JSON.stringify(refused));
    assert.match(JSON.stringify(refused.result), /Operation not permitted/);
    assert.ok(refused.warnings?.some((w) => /seccomp filter/.test(w)), JSON.stringify(refused));
    const missing = await executor.call("exec", JSON.stringify({ argv: ["ls", "/nonexistent"] }));
    assert.ok(missing.ok, JSON.stringify(missing));
    assert.ok(!missing.warnings?.some((w) => /seccomp filter/.test(w)), JSON.stringify(missing));
  },
);

hostTest(
  "seccomp: where bubblewrap cannot load the filter, the call does not run without it and the envelope says why",
  NO_GCC,
  async () => {
    const workspace = await probeWorkspace();
    const home = await realTempDir("toolgate_seccomp_home_");
    const executor = await scriptExecutor(workspace, {
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home },
    });
    const first = await runScript(executor, "script_workspace", "echo ran > ran.txt; ./escape_probe fd");
    assert.match(first.out, /fd3:closed/);
    Deno.removeSync(join(workspace, "ran.txt"));
    // The program is spoiled behind the launcher's back (as a kernel that refuses filters would refuse it).
    const dir = join(home, ".local", "state", "toolgate", "seccomp");
    for (const entry of Deno.readDirSync(dir)) {
      Deno.chmodSync(join(dir, entry.name), 0o644);
      Deno.writeFileSync(join(dir, entry.name), new Uint8Array([1, 2, 3]));
    }
    const refused = await executor.call("script_workspace", JSON.stringify({ script: "echo ran > ran.txt" }));
    assert.equal(refused.ok, false, JSON.stringify(refused));
    assert.match(JSON.stringify(refused.warnings ?? []), /could not be loaded/, JSON.stringify(refused));
    assert.throws(() => Deno.statSync(join(workspace, "ran.txt")), Deno.errors.NotFound);
  },
);

confinedTest("seccomp: a background job runs under the filter", async () => {
  const workspace = await realTempDir("toolgate_seccomp_job_");
  const executor = await scriptExecutor(workspace, { jobs: true }, join(FIXTURES, "..", "..", "tools.json"));
  const started = await executor.call(
    "exec",
    JSON.stringify({ shell: "grep Seccomp: /proc/self/status; unshare -U true", background: true }),
  );
  assert.ok(started.ok, JSON.stringify(started));
  const { job_id } = started.result as { job_id: string };
  const prepared = await executor.prepare(
    "job",
    JSON.stringify({ action: "wait", job_id, timeout_ms: 20_000 }),
  );
  assert.ok(prepared.ok, JSON.stringify(prepared));
  const ended = await executor.run(prepared.call, {});
  assert.ok(ended.ok, JSON.stringify(ended));
  const text = JSON.stringify(ended.result);
  assert.match(text, /Seccomp:\\t2/, text);
  assert.match(text, /Operation not permitted/, text);
});

confinedTest(
  "seccomp: --sandbox unfiltered (the named degraded mode) confines without the filter, and every envelope says so",
  async () => {
    const executor = await scriptExecutor(await realTempDir("toolgate_seccomp_unfiltered_"), {
      sandbox: "unfiltered",
    });
    const envelope = await executor.call(
      "script_workspace",
      JSON.stringify({ script: "grep -E '^(Seccomp|CapEff):' /proc/self/status; ls /root 2>&1 | head -n 1" }),
    );
    assert.ok(envelope.ok, JSON.stringify(envelope));
    const { out } = envelope.result as { out: string };
    assert.match(out, /Seccomp:\s+0/, out);
    assert.match(out, /CapEff:\s+0000000000000000/, out);
    assert.match(
      JSON.stringify(envelope.warnings ?? []),
      /without the seccomp filter \(--sandbox unfiltered\)/,
    );
  },
);

confinedTest(
  "seccomp: a caller with neither HOME nor XDG_STATE_HOME still runs confined tools under the filter",
  async () => {
    const workspace = await realTempDir("toolgate_seccomp_nohome_");
    const executor = await scriptExecutor(workspace, { env: { PATH: "/usr/local/bin:/usr/bin:/bin" } });
    const result = await runScript(
      executor,
      "script_none",
      "grep -q 'Seccomp:.2' /proc/self/status && echo filtered",
    );
    assert.match(result.out, /filtered/, result.out);
  },
);
