// Secrets that never enter the sandbox (issue 28): a confined tool with a credential bound to a host holds a
// placeholder; the egress proxy puts the value into requests to that host only (terminating TLS with the run's
// CA, verifying the real server against the CA toolgate was told to trust), masks it in what comes back, and
// refuses the placeholder anywhere else.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { writeFiles } from "../support.ts";
import { hostTest, NO_BWRAP, realTempDir, SCRIPT_FIXTURE, scriptExecutor } from "./helpers.ts";
import { CertificateAuthority } from "../../src/sandbox/run_ca.ts";
import { AUDIT_KEY, readAudit } from "../executor_helpers.ts";
import type { Executor } from "../../src/run/executor.ts";

const CURL = ["/usr/bin/curl", "/bin/curl"].find(isFile);
const PYTHON = ["/usr/bin/python3"].find(isFile);

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

interface Hit {
  readonly path: string;
  readonly headers: string;
  readonly body: string;
}

/** A loopback server that keeps what it got; the bound one answers with the Authorization it received. */
function server(tls?: { cert: string; key: string }) {
  const hits: Hit[] = [];
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {}, ...tls }, async (request) => {
    const url = new URL(request.url);
    const body = await request.text();
    hits.push({ path: `${url.pathname}${url.search}`, headers: JSON.stringify([...request.headers]), body });
    const echo = `got[${request.headers.get("authorization")}]`;
    if (url.pathname === "/split") {
      // Chunked, the cut in the middle of the value: the second chunk is sent after the first went out.
      const cut = Math.floor(echo.length / 2);
      return new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(new TextEncoder().encode(echo.slice(0, cut)));
            await new Promise((resolve) => setTimeout(resolve, 50));
            controller.enqueue(new TextEncoder().encode(echo.slice(cut)));
            controller.close();
          },
        }),
      );
    }
    if (url.pathname === "/gzip") {
      // Compressed whatever the request asked for.
      return new Response(gzipSync(echo), { headers: { "content-encoding": "gzip" } });
    }
    return new Response(`got[${request.headers.get("authorization")}|${url.searchParams.get("key")}]`);
  });
  return { http, hits, port: http.addr.port };
}

interface Setup {
  readonly executor: Executor;
  readonly dir: string;
  readonly auditDir: string;
  readonly value: string;
  readonly bound: ReturnType<typeof server>;
  readonly other: ReturnType<typeof server>;
  close(): Promise<void>;
}

/**
 * A canary tool bound to one loopback HTTPS server, allowed another (plain HTTP, or HTTPS under the same test CA
 * with `otherTls`); toolgate is told to trust the test CA unless `trustUpstream` is false.
 */
async function setup(
  credential: Record<string, unknown>,
  { trustUpstream = true, otherTls = false } = {},
): Promise<Setup> {
  const upstreamCa = await CertificateAuthority.create("toolgate test upstream CA");
  const bound = server(await upstreamCa.issue("127.0.0.1"));
  const other = server(otherTls ? await upstreamCa.issue("127.0.0.1") : undefined);
  const dir = await realTempDir();
  const state = await realTempDir("toolgate_state_");
  const caFile = join(state, "upstream-ca.pem");
  await Deno.writeTextFile(caFile, upstreamCa.cert);
  const value = `canaryV4lue${crypto.randomUUID().replaceAll("-", "")}`;
  const runner = await Deno.readTextFile(join(SCRIPT_FIXTURE, "..", "tools", "bin", "run_script"));
  await writeFiles(dir, {
    "tools.json": {
      tools: [{
        name: "canary",
        command: ["./tools/bin/run_script"],
        permissions: { net: [`127.0.0.1:${bound.port}`, `127.0.0.1:${other.port}`] },
        credentials: [{
          secret: "CANARY_TOKEN",
          env: "CANARY_TOKEN",
          hosts: [`127.0.0.1:${bound.port}`],
          ...credential,
        }],
      }],
    },
    "tools/bin/run_script": runner,
    // The test CA's certificate (public), where the tool can read it.
    "upstream-ca.pem": upstreamCa.cert,
  });
  await Deno.chmod(join(dir, "tools/bin/run_script"), 0o755);
  const auditDir = join(state, "audit");
  const executor = await scriptExecutor(dir, {
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      XDG_STATE_HOME: state,
      ...(trustUpstream ? { TOOLGATE_UPSTREAM_CA: caFile } : {}),
    },
    secrets: { CANARY_TOKEN: value },
    auditDir,
    auditKey: AUDIT_KEY,
  }, join(dir, "tools.json"));
  return {
    executor,
    dir,
    auditDir,
    value,
    bound,
    other,
    close: async () => {
      await bound.http.shutdown();
      await other.http.shutdown();
    },
  };
}

async function call(executor: Executor, script: string) {
  const envelope = await executor.call("canary", JSON.stringify({ script }));
  assert.ok(envelope.ok, JSON.stringify(envelope));
  const result = envelope.result as { status: number; out: string };
  return { out: result.out, warnings: envelope.warnings ?? [], raw: JSON.stringify(envelope) };
}

/**
 * The value in none of what the sandbox holds: its variables, every process's, the files it can read; and no
 * private key where the CA bundle is.
 */
async function assertNothingInside(s: Setup): Promise<void> {
  // The pattern is joined only in the shell's variable: no file and no command line inside holds it but grep's own.
  const half = Math.floor(s.value.length / 2);
  const script = [
    `a=${s.value.slice(0, half)}`,
    `b=${s.value.slice(half)}`,
    // awk is given the halves apart: its own command line does not hold the value.
    `cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | awk -v a=$a -v b=$b 'index($0, a b) {n++} END {print n+0}'`,
    `grep -rlsF $a$b /tmp /etc /dev/shm /root /home /var /run /opt ${s.dir}`,
    // Nor the run CA's private key: only its certificate is shown (the bundle in /tmp). Text files only: a key
    // is PEM text, and a runtime's binary shown under /tmp (a Deno from npx under a home in /tmp) holds the words.
    `grep -rlsIF 'PRIVATE KEY' /tmp /dev/shm /run ${s.dir}; echo searched`,
  ].join("; ");
  const { out } = await call(s.executor, script);
  assert.match(out, /^0 searched$/, `the value was found inside the sandbox: ${out}`);
}

hostTest(
  "a bound credential: the tool holds a placeholder only; curl reaches the bound host with the value, nothing else gets it",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const s = await setup({ header: "Authorization", format: "Bearer {}" });
    try {
      const b = `https://127.0.0.1:${s.bound.port}`;
      const o = `http://127.0.0.1:${s.other.port}`;
      const script = [
        "env",
        "xargs -0 -n1 echo < /proc/self/environ",
        "tail -n 12 $SSL_CERT_FILE",
        `curl -sS -m 10 ${b}/added; echo`,
        `curl -sS -m 10 -H 'Authorization: Bearer '$CANARY_TOKEN ${b}/swapped; echo`,
        `curl -sS -m 10 -o /dev/null -w body=%{http_code} -d k=$CANARY_TOKEN ${b}/body; echo`,
        `curl -sS -m 10 -o /dev/null -w url=%{http_code} ${b}/url?x=$CANARY_TOKEN; echo`,
        `curl -sS -m 10 -o /dev/null -w other=%{http_code} -H 'X-Key: '$CANARY_TOKEN ${o}/leak; echo`,
        `curl -sS -m 10 ${o}/plain; echo`,
      ].join("; ");
      const { out, warnings, raw } = await call(s.executor, script);
      assert.ok(!raw.includes(s.value), `the value reached the tool's output: ${out}`);
      assert.match(out, /CANARY_TOKEN=toolgate-cred-[0-9a-f]{32}/, out);
      assert.match(out, /SSL_CERT_FILE=\/tmp\/\.toolgate-ca\.pem/, out);
      assert.match(out, /BEGIN CERTIFICATE/, out);
      // The bound host got the value (added by format, and swapped for the placeholder); what came back is masked.
      assert.match(out, /got\[Bearer \*{10,}\|null\].*got\[Bearer \*{10,}\|null\]/, out);
      assert.deepEqual(s.bound.hits.map((h) => h.path), ["/added", "/swapped"]);
      for (const hit of s.bound.hits) assert.ok(hit.headers.includes(`Bearer ${s.value}`), hit.headers);
      // Out of place: in a body or the URL of the bound host, or to another host: refused, and said so.
      assert.match(out, /body=403/, out);
      assert.match(out, /url=403/, out);
      assert.match(out, /other=403/, out);
      assert.deepEqual(s.other.hits.map((h) => h.path), ["/plain"]);
      assert.ok(s.other.hits.every((h) => !JSON.stringify(h).includes(s.value)));
      assert.ok(warnings.some((w) => /refused a request.*request body/.test(w)), JSON.stringify(warnings));
      assert.ok(warnings.some((w) => /refused a request.*not bound to/.test(w)), JSON.stringify(warnings));
      const egress = (await readAudit(s.auditDir)).flatMap((r) => (r.egress ?? []) as { reason?: string }[]);
      assert.ok(egress.some((d) => d.reason?.includes("request body")), JSON.stringify(egress));
      assert.ok(!JSON.stringify(await readAudit(s.auditDir)).includes(s.value));
      await assertNothingInside(s);
    } finally {
      await s.close();
    }
  },
);

hostTest(
  "a bound credential reflected in a chunked answer cut inside it, or in a gzip answer: curl in the sandbox gets it masked",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const s = await setup({ header: "Authorization", format: "Bearer {}" });
    try {
      const b = `https://127.0.0.1:${s.bound.port}`;
      // Hex, as a tool that hides what it got would print it: toolgate's masking of its output cannot help.
      const hex = "od -An -v -tx1 | tr -dc 0-9a-f";
      const { out, raw } = await call(
        s.executor,
        `curl -sS -m 10 ${b}/split | ${hex}; echo; curl -sS -m 10 --compressed ${b}/gzip | ${hex}; echo`,
      );
      const got = out.trim().split(/\s+/).map((h) => Buffer.from(h, "hex").toString());
      assert.ok(!raw.includes(s.value), `the value reached the tool's output: ${out}`);
      assert.ok(got.every((text) => !text.includes(s.value)), `the value reached the tool: ${got}`);
      assert.equal(got.length, 2, out);
      for (const text of got) assert.match(text, /^got\[Bearer \*{10,}\]$/, text);
      assert.deepEqual(s.bound.hits.map((h) => h.path), ["/split", "/gzip"]);
    } finally {
      await s.close();
    }
  },
);

hostTest(
  "a bound credential in a query parameter: Python's urllib in the sandbox reaches the bound host with it",
  NO_BWRAP ?? (PYTHON ? undefined : "/usr/bin/python3 is not installed"),
  async () => {
    const s = await setup({ query: "key" });
    try {
      await Deno.writeTextFile(
        join(s.dir, "canary.py"),
        [
          "import os, urllib.request, urllib.error",
          "print(dict(os.environ))",
          `print(urllib.request.urlopen('https://127.0.0.1:${s.bound.port}/q?key=' + os.environ['CANARY_TOKEN']).read())`,
          `print(urllib.request.urlopen('https://127.0.0.1:${s.bound.port}/added').read())`,
          "try:",
          `    urllib.request.urlopen('http://127.0.0.1:${s.other.port}/leak?key=' + os.environ['CANARY_TOKEN'])`,
          "except urllib.error.HTTPError as e:",
          "    print('other', e.code)",
        ].join("\n"),
      );
      const { out, raw } = await call(s.executor, `${PYTHON} canary.py`);
      assert.ok(!raw.includes(s.value), `the value reached the tool's output: ${out}`);
      assert.match(out, /'CANARY_TOKEN': 'toolgate-cred-[0-9a-f]{32}'/, out);
      assert.match(out, /got\[null\|\*{10,}\].*got\[null\|\*{10,}\]/, out);
      assert.match(out, /other 403/, out);
      assert.deepEqual(s.bound.hits.map((h) => h.path), [`/q?key=${s.value}`, `/added?key=${s.value}`]);
      assert.deepEqual(s.other.hits, []);
      await assertNothingInside(s);
    } finally {
      await s.close();
    }
  },
);

hostTest(
  "the broker verifies the real server; an unbound HTTPS host stays an opaque tunnel; the placeholder is new at each call and the CA at each run",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const trusted = await setup({ header: "Authorization", format: "Bearer {}" }, { otherTls: true });
    const untrusted = await setup({ header: "Authorization", format: "Bearer {}" }, { trustUpstream: false });
    try {
      // An unbound HTTPS host: the tool's TLS reaches the server itself, whose certificate only the test CA
      // verifies (the run CA's bundle does not: curl's exit 60); the proxy holds no key for it.
      const o = `https://127.0.0.1:${trusted.other.port}`;
      const b = `https://127.0.0.1:${trusted.bound.port}`;
      const first = await call(
        trusted.executor,
        `echo $CANARY_TOKEN; md5sum < $SSL_CERT_FILE; curl -sS -m 10 --cacert upstream-ca.pem ${o}/own; echo; ` +
          `curl -s -m 10 ${o}/bundle; echo exit=$?; curl -sS -m 10 ${b}/added`,
      );
      const [placeholder, bundle] = first.out.split(" ");
      assert.match(placeholder, /^toolgate-cred-[0-9a-f]{32}$/, first.out);
      assert.match(first.out, /got\[null\|null\] exit=60 got\[Bearer \*{10,}\|null\]/, first.out);
      assert.deepEqual(trusted.other.hits.map((h) => h.path), ["/own"]);
      assert.ok(
        !JSON.stringify(trusted.other.hits).includes("toolgate-cred-"),
        "the tunnel got the placeholder",
      );
      // The same run's next call: another placeholder, the same CA.
      const second = await call(trusted.executor, `echo $CANARY_TOKEN; md5sum < $SSL_CERT_FILE`);
      const [placeholder2, bundle2] = second.out.split(" ");
      assert.match(placeholder2, /^toolgate-cred-[0-9a-f]{32}$/, second.out);
      assert.notEqual(placeholder2, placeholder);
      assert.equal(bundle2, bundle);

      // Another run (another executor, its own proxy) whose bound host has a certificate toolgate was not told
      // to trust: the proxy verifies it as any client would, so the request is not sent and the value with it.
      const u = `https://127.0.0.1:${untrusted.bound.port}`;
      const third = await call(
        untrusted.executor,
        `md5sum < $SSL_CERT_FILE; curl -s -m 10 -o /dev/null -w code=%{http_code} ${u}/unverified; echo exit=$?`,
      );
      assert.ok(!third.raw.includes(untrusted.value), third.raw);
      assert.notEqual(third.out.split(" ")[0], bundle, "a new run reused the CA bundle");
      assert.match(third.out, /code=502/, third.out);
      assert.ok(
        third.warnings.some((w) => /refused a request.*certificate/.test(w)),
        JSON.stringify(third.warnings),
      );
      assert.deepEqual(untrusted.bound.hits, []);
    } finally {
      await trusted.close();
      await untrusted.close();
    }
  },
);

Deno.test("credentials: a bound host must be in the profile's host list, and each field is checked", async () => {
  const { loadManifest } = await import("../../src/manifest/manifest.ts");
  const dir = await realTempDir();
  await writeFiles(dir, {
    "tools.json": {
      tools: [{
        name: "fetch",
        command: ["/bin/true"],
        permissions: { net: ["api.example.com"] },
        credentials: [
          { secret: "GH_TOKEN", env: "GH_TOKEN", hosts: ["api.github.com"], header: "Authorization" },
          { secret: "K", env: "K", hosts: ["api.example.com"], header: "X-Key", query: "key" },
          { secret: "K2", env: "K2", hosts: ["api.example.com"], query: "key", format: "{}" },
        ],
      }, {
        name: "open",
        command: ["/bin/true"],
        permissions: { net: true },
        credentials: [{ secret: "K", env: "K", hosts: ["api.example.com"], header: "X-Key" }],
      }],
    },
  });
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.equal(loaded.ok, false);
  const errors = loaded.ok ? [] : loaded.errors;
  assert.ok(
    errors.includes(
      `tool[0] "fetch": credentials[0].hosts[0]: api.github.com is not in the tool's profile host list (api.example.com)`,
    ),
    errors.join("\n"),
  );
  assert.ok(errors.includes(`tool[0] "fetch": credentials[1] must name exactly one of "header" or "query"`));
  assert.ok(errors.includes(`tool[0] "fetch": credentials[2].format applies to a header only`));
  assert.ok(
    errors.some((e) =>
      e.startsWith(`tool[1] "open": credentials[0].hosts[0]: api.example.com is bound, but`)
    ),
  );
});
