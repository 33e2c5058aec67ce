// Denials the model can read (issue 41): what toolgate refused a confined tool is a typed entry
// (`denials: [{kind, target, rule}]`) in the envelope, the audit line and the call's span, so that the model
// tells "not allowed here" from "failed" and a person widens the profile knowingly. A host the profile does not
// list (exact: the egress proxy decided it), a path the sandbox does not show (exact: toolgate compared it with
// the view), a kernel call the seccomp filter refused (inferred from the tool's "Operation not permitted"), for
// foreground calls and background jobs alike; a tool cannot forge one.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Denial, Envelope } from "../../src/contract.ts";
import { openTracing } from "../../src/run/tracing.ts";
import { AUDIT_KEY, readAudit } from "../executor_helpers.ts";
import { otlpReceiver } from "../run/otlp_receiver.ts";
import { FIXTURES, tempDir, writeFiles } from "../support.ts";
import {
  confinedTest,
  hostTest,
  netScriptExecutor,
  NO_BWRAP,
  realTempDir,
  scriptExecutor,
} from "./helpers.ts";

/** The project's own manifest: the built-in belt, `exec` and `job` among it. */
const BELT_MANIFEST = join(FIXTURES, "..", "..", "tools.json");

const CURL = ["/usr/bin/curl", "/bin/curl"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

const UNSHARE_DENIAL: Denial = {
  kind: "syscall",
  target: "unshare",
  rule: "seccomp: namespaces",
  inferred: true,
};

confinedTest(
  "denials: a tool refused a nested user namespace gets a typed syscall denial in its envelope and audit line, not unfiltered",
  async () => {
    const workspace = await realTempDir("toolgate_denials_");
    const auditDir = join(workspace, ".audit");
    const executor = await scriptExecutor(workspace, { auditDir, auditKey: AUDIT_KEY }, BELT_MANIFEST);
    const refused = await executor.call("exec", JSON.stringify({ argv: ["unshare", "-U", "true"] }));
    assert.ok(refused.ok, JSON.stringify(refused));
    assert.match(JSON.stringify(refused.result), /Operation not permitted/);
    assert.deepEqual(refused.denials, [UNSHARE_DENIAL], JSON.stringify(refused));
    // A failure of another cause is no denial: the model reads it as a failure.
    const missing = await executor.call("exec", JSON.stringify({ argv: ["ls", "/nonexistent"] }));
    assert.ok(missing.ok, JSON.stringify(missing));
    assert.equal(missing.denials, undefined, JSON.stringify(missing));
    await executor.close();
    const lines = (await readAudit(auditDir)).filter((r) => r.tool === "exec");
    assert.equal(lines.length, 2, JSON.stringify(lines));
    assert.deepEqual(lines[0].denials, [UNSHARE_DENIAL], JSON.stringify(lines[0]));
    assert.equal(lines[1].denials, undefined, JSON.stringify(lines[1]));
    // Without the filter (--sandbox unfiltered) the kernel may allow or refuse it: either way the filter is not blamed.
    const unfiltered = await scriptExecutor(workspace, { sandbox: "unfiltered" }, BELT_MANIFEST);
    const open = await unfiltered.call("exec", JSON.stringify({ argv: ["unshare", "-U", "true"] }));
    assert.ok(open.ok, JSON.stringify(open));
    assert.equal(open.denials, undefined, JSON.stringify(open));
  },
);

confinedTest(
  "denials: a background job refused a kernel call says so in its answer and its end's audit line",
  async () => {
    const workspace = await realTempDir("toolgate_denials_job_");
    const auditDir = join(workspace, ".audit");
    const executor = await scriptExecutor(
      workspace,
      { jobs: true, auditDir, auditKey: AUDIT_KEY },
      BELT_MANIFEST,
    );
    const started = await executor.call(
      "exec",
      JSON.stringify({ shell: "unshare -U true", background: true }),
    );
    assert.ok(started.ok, JSON.stringify(started));
    const { job_id } = started.result as { job_id: string };
    const prepared = await executor.prepare(
      "job",
      JSON.stringify({ action: "wait", job_id, timeout_ms: 20_000 }),
    );
    assert.ok(prepared.ok, JSON.stringify(prepared));
    const ended: Envelope = await executor.run(prepared.call, {});
    assert.ok(ended.ok, JSON.stringify(ended));
    assert.deepEqual(ended.denials, [UNSHARE_DENIAL], JSON.stringify(ended));
    await executor.close();
    const end = (await readAudit(auditDir)).find((r) => r.background === true && r.job_state !== undefined);
    assert.deepEqual(end?.denials, [UNSHARE_DENIAL], JSON.stringify(end));
  },
);

hostTest(
  "denials: a host not in the tool's profile is a host denial in the envelope, the audit line and the span",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    await using receiver = await otlpReceiver();
    const listed = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("hi"),
    );
    const unlisted = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("no"),
    );
    const dir = await realTempDir("toolgate_denials_host_");
    const auditDir = join(dir, ".audit");
    try {
      const executor = await netScriptExecutor(dir, "fetcher", [`127.0.0.1:${listed.addr.port}`], {
        auditDir,
        auditKey: AUDIT_KEY,
        tracing: await openTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }),
      });
      const span = executor.tracing.toolCall({ tool: "fetcher" });
      const script = [
        `curl -sS -m 10 http://127.0.0.1:${listed.addr.port}/; echo`,
        `curl -sS -m 10 -o /dev/null -w refused=%{http_code} http://127.0.0.1:${unlisted.addr.port}/x; echo`,
      ].join("; ");
      const envelope = await executor.call("fetcher", JSON.stringify({ script }), { trace: span });
      span.end();
      assert.ok(envelope.ok, JSON.stringify(envelope));
      assert.match(JSON.stringify(envelope.result), /refused=403/);
      const denial: Denial = { kind: "host", target: `127.0.0.1:${unlisted.addr.port}`, rule: "profile net" };
      assert.deepEqual(envelope.denials, [denial], JSON.stringify(envelope));
      await executor.close();
      const line = (await readAudit(auditDir)).find((r) => r.tool === "fetcher");
      assert.deepEqual(line?.denials, [denial], JSON.stringify(line));
      const spans = await receiver.waitFor((s) => s.some((x) => x.name === "execute_tool fetcher"));
      const call = spans.find((s) => s.name === "execute_tool fetcher")!;
      assert.deepEqual(call.events, [{
        name: "toolgate.denial",
        attributes: {
          "toolgate.denial.kind": "host",
          "toolgate.denial.target": denial.target,
          "toolgate.denial.rule": "profile net",
          "toolgate.denial.inferred": false,
        },
      }]);
    } finally {
      await listed.shutdown();
      await unlisted.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

confinedTest(
  "denials: the net bridge's own Deno asks no host of the call's proxy (no dl.deno.land on the line), and the tool gets no variable of the bridge's",
  async () => {
    const dir = await realTempDir("toolgate_denials_bridge_");
    const auditDir = join(dir, ".audit");
    try {
      const executor = await netScriptExecutor(dir, "quiet", ["api.example.com"], {
        auditDir,
        auditKey: AUDIT_KEY,
      });
      // Long enough for Deno's look for a newer release of itself, which it starts at once, to reach the proxy.
      const envelope = await executor.call("quiet", JSON.stringify({ script: "sleep 2; env | cut -d= -f1" }));
      await executor.close();
      assert.ok(envelope.ok, JSON.stringify(envelope));
      assert.equal(envelope.denials, undefined, JSON.stringify(envelope));
      assert.doesNotMatch(JSON.stringify(envelope.result), /DENO_NO_UPDATE_CHECK/);
      const line = (await readAudit(auditDir)).find((r) => r.tool === "quiet");
      assert.equal(line?.egress, undefined, JSON.stringify(line));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

confinedTest("denials: a helper in a folder the sandbox does not show is a path denial", async () => {
  await using hidden = await tempDir();
  await using work = await tempDir();
  const helpers = join(hidden.path, ".helpers");
  await writeFiles(hidden.path, { ".helpers/greet": "#!/bin/sh\necho '{\"hi\":1}'\n" });
  await Deno.chmod(join(helpers, "greet"), 0o755);
  await writeFiles(work.path, {
    "tools.json": {
      tools: [{
        name: "via_sh",
        command: ["./tools/bin/via_sh"],
        readOnly: true,
        permissions: { read: [], write: [], net: false },
      }],
    },
    "tools/bin/via_sh": `#!/bin/sh\nhelpers=${helpers}\n"$helpers/greet"\n`,
  });
  await Deno.chmod(join(work.path, "tools/bin/via_sh"), 0o755);
  const executor = await scriptExecutor(work.path, {}, join(work.path, "tools.json"));
  const envelope = await executor.call("via_sh", "{}");
  assert.equal(envelope.ok, false, JSON.stringify(envelope));
  assert.deepEqual(envelope.denials, [{
    kind: "path",
    target: join(helpers, "greet"),
    rule: "profile read",
  }]);
});

confinedTest("denials: a built-in tool refused a path outside the workspace says which, typed", async () => {
  const workspace = await realTempDir("toolgate_denials_builtin_");
  const executor = await scriptExecutor(workspace, {}, BELT_MANIFEST);
  for (const path of ["/etc/passwd", "../outside.txt"]) {
    const refused = await executor.call("fs_read_file", JSON.stringify({ path }));
    assert.equal(refused.ok, false, JSON.stringify(refused));
    assert.deepEqual(
      refused.denials,
      [{ kind: "path", target: path, rule: "workspace only" }],
      JSON.stringify(refused),
    );
  }
  // A file that is simply not there is no denial.
  const missing = await executor.call("fs_read_file", JSON.stringify({ path: "absent.txt" }));
  assert.equal(missing.ok, false, JSON.stringify(missing));
  assert.equal(missing.denials, undefined, JSON.stringify(missing));
});

Deno.test("denials: a tool's own envelope cannot claim a denial toolgate did not decide", async () => {
  await using work = await tempDir();
  const denials = [{ kind: "host", target: "api.example.com:443", rule: "profile net" }];
  const failed = JSON.stringify({ ok: false, kind: "execution_error", message: "refused", denials });
  const succeeded = JSON.stringify({ ok: true, result: 1, denials });
  await writeFiles(work.path, {
    "tools.json": {
      tools: [
        { name: "forge_failure", command: ["./tools/bin/forge_failure"], permissions: "none" },
        { name: "forge_success", command: ["./tools/bin/forge_success"], permissions: "none" },
      ],
    },
    "tools/bin/forge_failure": `#!/bin/sh\necho '${failed}' >&2\nexit 1\n`,
    "tools/bin/forge_success": `#!/bin/sh\necho '${succeeded}'\n`,
  });
  await Deno.chmod(join(work.path, "tools/bin/forge_failure"), 0o755);
  await Deno.chmod(join(work.path, "tools/bin/forge_success"), 0o755);
  const executor = await scriptExecutor(work.path, { sandbox: "off" }, join(work.path, "tools.json"));
  const failure = await executor.call("forge_failure", "{}");
  assert.equal(failure.ok, false, JSON.stringify(failure));
  assert.equal(failure.denials, undefined, JSON.stringify(failure));
  const success = await executor.call("forge_success", "{}");
  assert.ok(success.ok, JSON.stringify(success));
  assert.equal(success.denials, undefined, JSON.stringify(success));
});
