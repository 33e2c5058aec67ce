/**
 * What the trust digest covers of the code a manifest's tools and MCP servers name on their command lines (issue
 * 38): which paths count, the bounds of a folder's walk (and that the prompt says when they are reached), a path
 * looked for in the workspace as the program looks for it, and the launcher's grant that lets the run look at a
 * path outside its folders, and the console's trust view of them. The end-to-end attacks are in
 * `tests/security/trust_code_test.ts`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { MAX_CODE_FILES, readManifestContent } from "../../src/manifest/trust.ts";
import { describeChanges } from "../../src/manifest/trust_changes.ts";
import { writeTrustRecord } from "../../src/manifest/trust_record.ts";
import { planLaunch } from "../../src/launcher/launch_plan.ts";
import { trustSource } from "../../src/console/trust_view.ts";
import { tempDir, writeFiles } from "../support.ts";

async function content(path: string, workspace?: string) {
  const read = await readManifestContent(path, undefined, { workspace });
  assert.ok(read);
  return read;
}

Deno.test("trust code: a folder argument is walked within bounds: node_modules, .git and __pycache__ left out, and the prompt says when the rest is not covered", async () => {
  await using dir = await tempDir();
  const files: Record<string, string> = {
    "tools.json": JSON.stringify({ mcpServers: { s: { command: "node", args: ["./app"] } } }),
    "app/index.js": "1",
    "app/node_modules/dep/index.js": "1",
    "app/.git/HEAD": "ref",
    "app/__pycache__/x.pyc": "1",
  };
  await writeFiles(dir.path, files);
  const small = await content(join(dir.path, "tools.json"));
  assert.deepEqual(small.summary.code, { "app/index.js": small.summary.code?.["app/index.js"] });
  assert.equal(small.summary.codeCapped, undefined);
  assert.deepEqual(small.summary.servers?.[0].code, [{ path: "app/", files: 1 }]);
  // One file more than toolgate pins: pinned up to the bound, and said.
  for (let i = 0; i < MAX_CODE_FILES; i++) await Deno.writeTextFile(join(dir.path, "app", `f${i}.js`), "x");
  const big = await content(join(dir.path, "tools.json"));
  assert.equal(big.summary.codeCapped, `more than ${MAX_CODE_FILES} files`);
  assert.equal(Object.keys(big.summary.code ?? {}).length, MAX_CODE_FILES);
  const lines = describeChanges(undefined, big.summary);
  assert.ok(
    lines.includes(
      `~ the code the command lines name is more than toolgate pins (more than ${MAX_CODE_FILES} files): the rest is not covered`,
    ),
    lines.join("\n"),
  );
  assert.ok(
    describeChanges(small.summary, big.summary).some((line) => line.endsWith("the rest is not covered")),
  );
});

Deno.test("trust code: a relative path is looked for in the workspace too, where the program runs", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": JSON.stringify({ mcpServers: { s: { command: "python3", args: ["./srv.py"] } } }),
    "sub/srv.py": "print(1)\n",
  });
  const manifest = join(dir.path, "tools.json");
  // From the manifest's folder there is no srv.py: nothing of the server's own is named.
  assert.deepEqual((await content(manifest)).summary.servers?.[0].code, []);
  // Run in sub/, `python3 ./srv.py` runs sub/srv.py: it is covered, and a change to it is one.
  const sub = join(dir.path, "sub");
  const before = await content(manifest, sub);
  assert.deepEqual(before.summary.servers?.[0].code, [{ path: "sub/srv.py", files: 1 }]);
  await writeFiles(dir.path, { "sub/srv.py": "print(2)\n" });
  const after = await content(manifest, sub);
  assert.notEqual(after.digest, before.digest);
  assert.deepEqual(describeChanges(before.summary, after.summary), [
    "~ code sub/srv.py changed (run by server s)",
  ]);
});

Deno.test("trust code: a path outside the manifest's folder is pinned, and the launcher lets the run look at it (there or not)", async () => {
  await using dir = await tempDir();
  await using outside = await tempDir();
  const script = join(outside.path, "srv.py");
  const later = join(outside.path, "later.py");
  await writeFiles(outside.path, { "srv.py": "print(1)\n" });
  await writeFiles(dir.path, {
    "tools.json": JSON.stringify({ mcpServers: { s: { command: "python3", args: [script, later] } } }),
  });
  const read = await content(join(dir.path, "tools.json"), dir.path);
  const real = await Deno.realPath(script);
  assert.deepEqual(read.summary.servers?.[0].code, [{ path: real, files: 1 }]);
  assert.ok(read.codePaths.includes(later), "a path not there yet is still one to look at");
  await using state = await tempDir();
  const env = { XDG_STATE_HOME: state.path, PATH: "/usr/bin:/bin", HOME: "/nonexistent", TOOLGATE_TOOLS: "" };
  writeTrustRecord(join(state.path, "toolgate"), read, new Date());
  const set = (await planLaunch(["call", "mcp__s__x", "{}"], env, dir.path)).set;
  assert.ok(set.read.includes(script), set.read.join(","));
  assert.ok(set.read.includes(later), set.read.join(","));
});

Deno.test("trust code: the console's trust view lists each server's code and what is not covered", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": JSON.stringify({ mcpServers: { s: { command: "python3", args: ["./srv.py"] } } }),
    "srv.py": "print(1)\n",
  });
  const source = trustSource({
    location: { path: join(dir.path, "tools.json"), source: "found" },
    workspace: dir.path,
    stateDir: state.path,
    servers: [],
    definitions: () => Promise.resolve([]),
  });
  const view = await source.view();
  assert.equal(view.manifest.state, "untrusted");
  assert.deepEqual(view.manifest.tools, [
    'server s: ["python3","./srv.py"], profile none (writes nothing; no network), code srv.py',
  ]);
  assert.equal(
    view.manifest.changes[0],
    '+ server s: ["python3","./srv.py"], profile none (writes nothing; no network), code srv.py',
  );
  assert.match(view.manifest.changes.at(-1) ?? "", /^\(not covered: code loaded from elsewhere at run time/);
  assert.equal(await source.trust(view.version), "trusted");
  await writeFiles(dir.path, { "srv.py": "print(2)\n" });
  const changed = await source.view();
  assert.equal(changed.manifest.state, "changed");
  assert.equal(changed.manifest.changes[0], "~ code srv.py changed (run by server s)");
});

Deno.test("trust code: a folder argument that holds the workspace (the filesystem server's `.`) is named, not walked", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": JSON.stringify({
      mcpServers: { fs: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] } },
    }),
    "notes.md": "a",
  });
  const manifest = join(dir.path, "tools.json");
  const before = await content(manifest, dir.path);
  assert.deepEqual(before.summary.servers?.[0].code, [{ path: "./", files: 0, wide: true }]);
  assert.deepEqual(before.summary.code, {});
  assert.equal(
    describeChanges(undefined, before.summary)[0],
    '+ server fs: ["npx","-y","@modelcontextprotocol/server-filesystem","."], profile none (writes nothing; no network), code ./ (the workspace or a folder above it: not pinned)',
  );
  // The files the user works on are not the server's code: editing them is no change to trust.
  await writeFiles(dir.path, { "notes.md": "b" });
  assert.equal((await content(manifest, dir.path)).digest, before.digest);
});

Deno.test("trust code: a file of tools/ that a command line names too is one change, said with who runs it", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": JSON.stringify({ tools: [{ name: "t", command: ["./tools/bin/py", "./tools/lib/x.py"] }] }),
    "tools/bin/py": "#!/bin/sh\n",
    "tools/lib/x.py": "print(1)\n",
  });
  const manifest = join(dir.path, "tools.json");
  const before = await content(manifest);
  await writeFiles(dir.path, { "tools/lib/x.py": "print(2)\n" });
  assert.deepEqual(describeChanges(before.summary, (await content(manifest)).summary), [
    "~ code tools/lib/x.py changed (run by tool t)",
  ]);
});
