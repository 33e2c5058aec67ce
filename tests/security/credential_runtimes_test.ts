// Secrets bound to hosts (issue 28) where the user is: `toolgate call` through the launcher, under the least Deno
// permission set and `--locked`, with the programs of the common runtimes inside the sandbox (curl, Node 20's https
// through a CONNECT, Node 22's plain fetch and https, Deno's fetch, Python's requests and httpx where installed).
// Each one reaches a loopback HTTPS server (with a CA of its own, which toolgate is told to trust) through the
// credential broker: the server gets the value, the tool only its placeholder, and what comes back has the value
// masked.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { REPO, runToolgate, writeFiles } from "../support.ts";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { hostTest, NO_BWRAP, realTempDir } from "./helpers.ts";
import { CertificateAuthority } from "../../src/sandbox/run_ca.ts";
import { installNode22 } from "../node22.ts";

const SCRIPT_RUNNER = join(REPO, "tests", "fixtures", "security", "tools", "bin", "run_script");

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

const CURL = ["/usr/bin/curl", "/bin/curl"].find(isFile);
const NODE = ["/usr/bin/node", "/usr/local/bin/node"].find(isFile);
// The runtime that runs these tests, wherever it lives (npx's cache under the home folder on a new user's
// machine): the tool's profile shows its folder read-only.
const DENO = Deno.realPathSync(Deno.execPath());
const PYTHON = ["/usr/bin/python3"].find(isFile);

/** Why the system Python cannot run `module` (not installed), or `undefined` when it can. */
function pythonMissing(module: string): string | undefined {
  if (PYTHON === undefined) return "/usr/bin/python3 is not installed";
  const probe = new Deno.Command(PYTHON, { args: ["-c", `import ${module}`], stdout: "null", stderr: "null" })
    .outputSync();
  return probe.success ? undefined : `the system Python has no ${module} module`;
}

/** Node's https module through the proxy HTTPS_PROXY names: a CONNECT, then TLS over the tunnel (Node 20's fetch
 * and https ignore HTTPS_PROXY; NODE_EXTRA_CA_CERTS makes it trust the run's CA). */
const NODE_CLIENT = `
const http = require("node:http");
const https = require("node:https");
const net = require("node:net");
const tls = require("node:tls");
const [host, port, path] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: host + ":" + port })
  .on("connect", (res, socket) => {
    if (res.statusCode !== 200) return console.log("node CONNECT " + res.statusCode);
    const headers = { authorization: "Bearer " + process.env.CANARY_TOKEN };
    const tlsOptions = net.isIP(host) ? { socket, host } : { socket, host, servername: host };
    https.get({ host, port, path, headers, createConnection: () => tls.connect(tlsOptions) }, (answer) => {
      let body = "";
      answer.on("data", (d) => body += d).on("end", () => console.log("node " + answer.statusCode + " " + body));
    });
  }).end();
`;

/** Deno's fetch: HTTPS_PROXY and DENO_CERT are honoured as they are. */
const DENO_CLIENT = `
const [url] = Deno.args;
const answer = await fetch(url, { headers: { authorization: "Bearer " + Deno.env.get("CANARY_TOKEN") } });
console.log("deno " + answer.status + " " + await answer.text());
`;

/** Python's requests or httpx (module named by the first argument): both honour HTTPS_PROXY and the CA variables. */
const PYTHON_CLIENT = `
import os, sys
module, url = sys.argv[1], sys.argv[2]
headers = {"Authorization": "Bearer " + os.environ["CANARY_TOKEN"]}
if module == "requests":
    import requests
    answer = requests.get(url, headers=headers, timeout=10)
    print(module, answer.status_code, answer.text)
else:
    import httpx, ssl
    answer = httpx.get(url, headers=headers, timeout=10, verify=ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]))
    print(module, answer.status_code, answer.text)
`;

interface Setup {
  readonly dir: string;
  env: Record<string, string>;
  readonly state: string;
  readonly value: string;
  readonly url: string;
  readonly hits: string[];
  close(): Promise<void>;
}

async function setup(): Promise<Setup> {
  const upstreamCa = await CertificateAuthority.create("toolgate test upstream CA");
  const hits: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, ...await upstreamCa.issue("127.0.0.1") },
    (request) => {
      hits.push(request.headers.get("authorization") ?? "");
      return new Response(`got[${request.headers.get("authorization")}]`);
    },
  );
  const host = `127.0.0.1:${server.addr.port}`;
  const dir = await realTempDir();
  const state = await realTempDir("toolgate_state_");
  const caFile = join(state, "upstream-ca.pem");
  await Deno.writeTextFile(caFile, upstreamCa.cert);
  const value = `canaryV4lue${crypto.randomUUID().replaceAll("-", "")}`;
  await writeFiles(dir, {
    "tools.json": {
      tools: [{
        name: "canary",
        description: "Runs a shell script.",
        command: ["./tools/bin/run_script"],
        permissions: { net: [host], read: [dirname(DENO)] },
        credentials: [{
          secret: "CANARY_TOKEN",
          env: "CANARY_TOKEN",
          hosts: [host],
          header: "Authorization",
          format: "Bearer {}",
        }],
      }],
    },
    "tools/bin/run_script": await Deno.readTextFile(SCRIPT_RUNNER),
    "node_client.cjs": NODE_CLIENT,
    "deno_client.ts": DENO_CLIENT,
    "python_client.py": PYTHON_CLIENT,
  });
  return {
    dir,
    state,
    value,
    url: `https://${host}`,
    hits,
    env: {
      XDG_STATE_HOME: join(state, "state"),
      XDG_CONFIG_HOME: join(state, "config"),
      TOOLGATE_UPSTREAM_CA: caFile,
      // The value reaches toolgate through its environment (as an undeclared variable, the tool never sees it).
      CANARY_TOKEN: value,
    },
    close: () => server.shutdown(),
  };
}

/**
 * `toolgate call canary` of `script` (or of other arguments, for a canary of another program) through the launcher,
 * locked to the least set: its output line.
 */
async function callThroughLauncher(s: Setup, script: string | Record<string, unknown>): Promise<string> {
  const args = typeof script === "string" ? { script } : script;
  const run = await runToolgate(
    ["--tools", "./tools.json", "call", "canary", JSON.stringify(args), "--locked"],
    s.dir,
    s.env,
  );
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  // Nothing on stderr: no broader grant, no runtime noise, no missing permission.
  assert.equal(run.stderr, "");
  assert.ok(!run.stdout.includes(s.value), `the value reached the tool's output: ${run.stdout}`);
  const envelope = JSON.parse(run.stdout);
  assert.ok(envelope.ok, run.stdout);
  return envelope.result.out as string;
}

/** Every file under `dir` (toolgate's state: the CA bundle beside the proxy's socket) holds no private key. */
async function assertNoKeyWritten(dir: string): Promise<void> {
  const walk = async (path: string): Promise<void> => {
    for await (const entry of Deno.readDir(path)) {
      const child = join(path, entry.name);
      if (entry.isDirectory) await walk(child);
      else if (entry.isFile) {
        assert.doesNotMatch(
          await Deno.readTextFile(child),
          /PRIVATE KEY/,
          `a private key was written: ${child}`,
        );
      }
    }
  };
  await walk(dir);
}

hostTest(
  "through the launcher, locked to the least set: curl in the sandbox reaches the bound host with the value; no key is written",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const s = await setup();
    try {
      const out = await callThroughLauncher(
        s,
        `env | grep -E 'CANARY|CERT'; curl -sS -m 10 ${s.url}/added; echo; curl -sS -m 10 -H 'Authorization: Bearer '$CANARY_TOKEN ${s.url}/swapped`,
      );
      assert.match(out, /CANARY_TOKEN=toolgate-cred-[0-9a-f]{32}/, out);
      assert.match(out, /SSL_CERT_FILE=\/tmp\/\.toolgate-ca\.pem/, out);
      assert.match(out, /got\[Bearer \*{10,}\] got\[Bearer \*{10,}\]/, out);
      assert.deepEqual(s.hits, [`Bearer ${s.value}`, `Bearer ${s.value}`]);
      await assertNoKeyWritten(s.state);
    } finally {
      await s.close();
    }
  },
);

hostTest(
  "through the launcher: Node's https module, through a CONNECT to HTTPS_PROXY, reaches the bound host with the stored value",
  NO_BWRAP ?? (NODE ? undefined : "node is not installed"),
  async () => {
    const s = await setup();
    try {
      // The value from toolgate's secret store this time, not its environment.
      const { CANARY_TOKEN: _, ...env } = s.env;
      const set = await runToolgate(["secrets", "set", "CANARY_TOKEN"], s.dir, env, `${s.value}\n`);
      assert.equal(set.code, 0, set.stderr);
      s.env = env;
      const port = new URL(s.url).port;
      const out = await callThroughLauncher(
        s,
        `${NODE} --no-deprecation node_client.cjs 127.0.0.1 ${port} /node`,
      );
      assert.match(out, /^node 200 got\[Bearer \*{10,}\]$/, out);
      assert.deepEqual(s.hits, [`Bearer ${s.value}`]);
    } finally {
      await s.close();
    }
  },
);

/**
 * A tool written for Node 22 (its first line names the Node npm installed under the repository's tests/.cache):
 * plain `fetch` and `https.get`, no agent, no proxy code. Node 22.21+ and 24.5+ honour HTTPS_PROXY once NODE_USE_ENV_PROXY=1, which
 * toolgate sets; NODE_EXTRA_CA_CERTS makes it trust the run's CA.
 */
const NODE_FETCH_TOOL = (node: string) =>
  `#!${node}
const https = require("node:https");
let input = "";
process.stdin.on("data", (d) => input += d).on("end", async () => {
  const { url } = JSON.parse(input);
  const headers = { authorization: "Bearer " + process.env.CANARY_TOKEN };
  const answer = await fetch(url + "/fetch", { headers });
  const fetched = answer.status + " " + await answer.text();
  // The https module too: its global agent follows HTTPS_PROXY under NODE_USE_ENV_PROXY=1.
  https.get(url + "/https", { headers }, (got) => {
    let body = "";
    got.on("data", (d) => body += d).on("end", () => {
      const out = [process.version, process.env.CANARY_TOKEN, fetched, got.statusCode, body].join(" ");
      console.log(JSON.stringify({ out }));
    });
  });
});
`;

// Node 22 from npm is what TOOLGATE_REQUIRE_INSPECTOR=1 requires; it is installed only where bubblewrap works.
const NODE22 = NO_BWRAP === undefined ? await installNode22() : undefined;
hostTest(
  "through the launcher: Node 22's plain fetch and https (no agent code) reach the bound host with the value",
  NO_BWRAP ?? (NODE22 !== undefined && "missing" in NODE22 ? NODE22.missing : undefined),
  async () => {
    const node22 = NODE22 as { node: string };
    const s = await setup();
    try {
      const manifest = JSON.parse(await Deno.readTextFile(join(s.dir, "tools.json")));
      // The tool's own program is the Node script; its Node (under the repository, not a system folder) is shown
      // because its first line names it, with nothing else of the repository.
      manifest.tools[0].command = ["./tools/bin/node_fetch"];
      manifest.tools[0].permissions = { net: manifest.tools[0].permissions.net };
      await writeFiles(s.dir, {
        "tools.json": manifest,
        "tools/bin/node_fetch": NODE_FETCH_TOOL(node22.node),
      });
      const out = await callThroughLauncher(s, { url: s.url });
      assert.match(
        out,
        /^v22\.\d+\.\d+ toolgate-cred-[0-9a-f]{32} 200 got\[Bearer \*{10,}\] 200 got\[Bearer \*{10,}\]$/,
        out,
      );
      assert.deepEqual(s.hits, [`Bearer ${s.value}`, `Bearer ${s.value}`]);
    } finally {
      await s.close();
    }
  },
  NO_BWRAP === undefined ? "inspector" : "bwrap",
);

hostTest(
  "through the launcher: Deno's fetch (HTTPS_PROXY and DENO_CERT) reaches the bound host with the value",
  NO_BWRAP,
  async () => {
    const s = await setup();
    try {
      const out = await callThroughLauncher(
        s,
        `${DENO} run --quiet --no-prompt --no-config --allow-net --allow-env=CANARY_TOKEN deno_client.ts ${s.url}/deno`,
      );
      assert.match(out, /^deno 200 got\[Bearer \*{10,}\]$/, out);
      assert.deepEqual(s.hits, [`Bearer ${s.value}`]);
    } finally {
      await s.close();
    }
  },
);

for (const module of ["requests", "httpx"]) {
  hostTest(
    `through the launcher: Python's ${module} (HTTPS_PROXY and the CA variables) reaches the bound host with the value`,
    NO_BWRAP ?? pythonMissing(module),
    async () => {
      const s = await setup();
      try {
        const out = await callThroughLauncher(s, `${PYTHON} python_client.py ${module} ${s.url}/${module}`);
        assert.match(out, new RegExp(`^${module} 200 got\\[Bearer \\*{10,}\\]$`), out);
        assert.deepEqual(s.hits, [`Bearer ${s.value}`]);
      } finally {
        await s.close();
      }
    },
  );
}

/** An executor over the belt's exec and job, exec bound to the test's host through the canary credential. */
async function beltExecutor(s: Setup): Promise<Executor> {
  const belt = JSON.parse(await Deno.readTextFile(join(REPO, "tools.json")));
  const pick = (name: string) => {
    const tool = belt.tools.find((t: { name: string }) => t.name === name);
    return { ...tool, command: [join(REPO, "tools", "bin", name)] };
  };
  const manifest = JSON.parse(await Deno.readTextFile(join(s.dir, "tools.json")));
  const { permissions, credentials } = manifest.tools[0];
  await writeFiles(s.dir, {
    "jobs.json": { tools: [{ ...pick("exec"), permissions, credentials }, pick("job")] },
  });
  const loaded = await loadManifest(join(s.dir, "jobs.json"), { allowAbsoluteCommands: true });
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  return new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: s.state, ...s.env },
    cwd: s.dir,
    auditDir: null,
    sandbox: "require",
  });
}

hostTest(
  "a background exec job gets the placeholder and the CA bundle as a foreground call does: curl in it reaches the bound host with the value",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const s = await setup();
    try {
      const executor = await beltExecutor(s);
      try {
        const shell =
          `env | grep -E 'CANARY|SSL_CERT'; curl -sS -m 10 -H 'Authorization: Bearer '$CANARY_TOKEN ${s.url}/job`;
        const started = await executor.call("exec", JSON.stringify({ shell, background: true }));
        assert.ok(started.ok, JSON.stringify(started));
        const jobId = (started.result as { job_id: string }).job_id;
        const waited = await executor.call("job", JSON.stringify({ action: "wait", job_id: jobId }));
        const text = JSON.stringify(waited);
        assert.ok(!text.includes(s.value), text);
        assert.match(text, /CANARY_TOKEN=toolgate-cred-[0-9a-f]{32}/, text);
        assert.match(text, /SSL_CERT_FILE=\/tmp\/\.toolgate-ca\.pem/, text);
        assert.match(text, /got\[Bearer \*{10,}\]/, text);
        assert.deepEqual(s.hits, [`Bearer ${s.value}`]);
      } finally {
        await executor.endJobs();
      }
    } finally {
      await s.close();
    }
  },
);

hostTest(
  "the foreground exec passes its programs the proxy, the CA bundle and the placeholder: curl reaches the bound host with the value, env shows only the placeholder",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const s = await setup();
    try {
      const executor = await beltExecutor(s);
      const shell = `env | sort; curl -sS -m 10 ${s.url}/added; echo; ` +
        `curl -sS -m 10 -H 'Authorization: Bearer '$CANARY_TOKEN ${s.url}/swapped`;
      const answer = await executor.call("exec", JSON.stringify({ shell }));
      const text = JSON.stringify(answer);
      assert.ok(answer.ok, text);
      assert.ok(!text.includes(s.value), text);
      const { stdout } = answer.result as { stdout: string };
      assert.match(stdout, /^CANARY_TOKEN=toolgate-cred-[0-9a-f]{32}$/m, stdout);
      assert.match(stdout, /^HTTPS_PROXY=http:\/\/127\.0\.0\.1:\d+$/m, stdout);
      assert.match(stdout, /^CURL_CA_BUNDLE=\/tmp\/\.toolgate-ca\.pem$/m, stdout);
      // Nothing of toolgate's own but the way out: not the control plane's description, not another variable.
      assert.doesNotMatch(stdout, /TOOLGATE_PROTECTED|TOOLGATE_UPSTREAM_CA/, stdout);
      assert.match(stdout, /got\[Bearer \*{10,}\]\ngot\[Bearer \*{10,}\]/, stdout);
      assert.deepEqual(s.hits, [`Bearer ${s.value}`, `Bearer ${s.value}`]);
    } finally {
      await s.close();
    }
  },
);
