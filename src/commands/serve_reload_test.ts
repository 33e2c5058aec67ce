import assert from "node:assert/strict";
import { join } from "node:path";
import type { Io } from "./cli.ts";
import { Executor } from "../run/executor.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { readManifestContent } from "../manifest/trust.ts";
import { writeTrustRecord } from "../manifest/trust_record.ts";
import { stateRoot } from "../state/state.ts";
import { loadTrusted } from "./load.ts";
import { ManifestReload, type ReloadOutcome } from "./serve_reload.ts";

/** A read-only tool of the project's program `greet`. */
const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `Greets (${name}).`,
  command: ["./tools/bin/greet"],
  readOnly: true,
  permissions: "none",
  ...extra,
});

/** A project with `tools` (trusted as they are), its own state folder, and a reload of it (not watching). */
async function project(tools: unknown[], source: "found" | "tools" = "found") {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const state = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(join(dir, "tools", "bin", "greet"), "#!/bin/sh\necho '{}'\n");
  await Deno.chmod(join(dir, "tools", "bin", "greet"), 0o755);
  const path = join(dir, "tools.json");
  const env = { HOME: state, XDG_STATE_HOME: state, PATH: "/usr/bin:/bin" };
  const write = (manifest: unknown) => Deno.writeTextFile(path, JSON.stringify(manifest));
  const trust = async () => {
    const content = await readManifestContent(path, undefined, { workspace: dir });
    writeTrustRecord(stateRoot(env), content!, new Date());
    return content!;
  };
  await write({ tools });
  const content = await trust();
  const io: Io & { err: string } = {
    err: "",
    env,
    cwd: dir,
    interactive: false,
    stdin: () => Promise.resolve(""),
    stdout: () => Promise.resolve(),
    stderr: (text: string) => {
      io.err += text;
      return Promise.resolve();
    },
  };
  const parsed = { values: {}, positionals: [] };
  const loaded = await loadTrusted(parsed, io, path, content);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const executor = new Executor({ manifest: loaded.manifest, env, cwd: dir, auditDir: null });
  const told: string[][] = [];
  const reload = new ManifestReload({
    parsed,
    io,
    location: { path, source },
    workspace: dir,
    manifest: loaded.manifest,
    content: source === "found" ? content : undefined,
    executor,
    toolsChanged: (names) => void told.push([...names]),
    narrow: (next: Manifest) => next,
    pooled: false,
  });
  return {
    dir,
    executor,
    reload,
    told,
    write,
    trust,
    async [Symbol.asyncDispose]() {
      await reload.close();
      await executor.close();
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(state, { recursive: true });
    },
  };
}

/** The line an outcome says (none for "unchanged"). */
const lineOf = (outcome: ReloadOutcome) => "line" in outcome ? outcome.line : "";

const names = (executor: Executor) => executor.manifest.tools.map((t) => t.name);

Deno.test("serve reload: the same content is nothing to do; an edit not trusted is said and not served", async () => {
  await using p = await project([tool("greet")]);
  assert.deepEqual(await p.reload.check(), { kind: "unchanged" });
  await p.write({ tools: [tool("greet"), tool("shout")] });
  const outcome = await p.reload.check();
  assert.equal(outcome.kind, "untrusted");
  assert.match(
    lineOf(outcome),
    /changed and is not trusted: still serving the tools it had; check it, then run `toolgate trust` to serve it$/,
  );
  assert.deepEqual(names(p.executor), ["greet"]);
  assert.deepEqual(p.told, []);
});

Deno.test("serve reload: trusted content that fits takes the old tools' place, and says what changed", async () => {
  await using p = await project([tool("greet"), tool("gone")]);
  assert.ok((await p.executor.prepare("greet", "{}")).ok, "its schema compiled and used once");
  const schema = {
    type: "object",
    properties: { who: { type: "string" } },
    required: ["who"],
    additionalProperties: false,
  };
  await p.write({ tools: [tool("greet", { description: "Says hello.", schema }), tool("shout")] });
  await p.trust();
  const outcome = await p.reload.check();
  assert.equal(outcome.kind, "swapped");
  assert.match(
    lineOf(outcome),
    /was trusted again: serving its tools as they are now \(added shout; changed greet; removed gone\); clients are told$/,
  );
  assert.deepEqual(names(p.executor), ["greet", "shout"]);
  assert.deepEqual(p.told, [["shout", "greet", "gone"]]);
  // The new schema holds from the next call on.
  const refused = await p.executor.prepare("greet", "{}");
  assert.equal(refused.ok ? "ran" : refused.envelope.ok ? "ok" : refused.envelope.kind, "invalid_args");
  assert.ok((await p.executor.prepare("greet", '{"who":"me"}')).ok);
  assert.deepEqual(await p.reload.check(), { kind: "unchanged" }, "once served, the same content is nothing");
});

Deno.test("serve reload: trusted content with other MCP servers, or one that does not load, is refused", async () => {
  await using p = await project([tool("greet")]);
  await p.write({ tools: [tool("greet")], mcpServers: { s: { command: "/bin/true" } } });
  await p.trust();
  const servers = await p.reload.check();
  assert.equal(servers.kind, "refused");
  assert.match(
    lineOf(servers),
    /needs more than this serve was started with \(its mcpServers changed\): still serving the tools it had; restart serve to serve it$/,
  );
  await p.write({ tools: [{ name: "broken" }] });
  await p.trust();
  const broken = await p.reload.check();
  assert.equal(broken.kind, "refused");
  assert.match(lineOf(broken), /was trusted again but does not load \(/);
  assert.deepEqual(names(p.executor), ["greet"]);
  assert.deepEqual(p.told, []);
});

Deno.test("serve reload: a manifest named for the run is served changed only once trusted", async () => {
  await using p = await project([tool("greet")], "tools");
  assert.deepEqual(await p.reload.check(), { kind: "unchanged" });
  await p.write({ tools: [tool("greet"), tool("shout")] });
  assert.equal((await p.reload.check()).kind, "untrusted");
  await p.trust();
  assert.equal((await p.reload.check()).kind, "swapped");
  assert.deepEqual(names(p.executor), ["greet", "shout"]);
});
