/**
 * The trust module: what a manifest's digest covers, how a change reads, and the record in the state folder
 * (strict about who wrote it). The end-to-end attacks are in `tests/security/trust_test.ts`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StateDirError } from "../../src/state/state.ts";
import { readManifestContent } from "../../src/manifest/trust.ts";
import { pinFile, stillPinned } from "../../src/manifest/file_pins.ts";
import { RACY_MS } from "../../src/base/file_stamp.ts";
import { describeChanges } from "../../src/manifest/trust_changes.ts";
import { forgetTrust, readTrustRecord, trustDir, writeTrustRecord } from "../../src/manifest/trust_record.ts";
import { keepDigests, readKnownDigests } from "../../src/manifest/trust_digests.ts";
import { tempDir, writeFiles } from "../support.ts";

const MANIFEST = {
  tools: [
    { name: "a", command: ["./tools/bin/a"], readOnly: true, permissions: "none" },
    { name: "b", command: ["./tools/bin/b", "--flag"], permissions: "mine" },
  ],
};

/** The manifest with its profile and both programs, as the tests write it into a folder. */
const PROJECT = {
  "tools.json": MANIFEST,
  "permissions/mine.json": { write: ["."] },
  "tools/bin/a": "#!/bin/sh\necho '{}'\n",
  "tools/bin/b": "#!/bin/sh\necho '{}'\n",
};

async function content(dir: string) {
  const read = await readManifestContent(join(dir, "tools.json"));
  assert.ok(read);
  return read;
}

Deno.test("trust: the digest covers the manifest, each effective profile, each program and its own files; nothing else", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, {
    ...PROJECT,
    "tools/lib/helper.py": "print(1)\n",
    "notes.md": "x",
  });
  const first = await content(dir.path);
  assert.match(first.digest, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(first.summary.tools.map((t) => [t.name, t.profile, t.reach]), [
    ["a", "none", "writes nothing; no network"],
    ["b", "mine", "writes .; no network"],
  ]);
  // A file that is not the manifest's own (the workspace's) changes nothing.
  await writeFiles(dir.path, { "notes.md": "y" });
  assert.equal((await content(dir.path)).digest, first.digest);
  // Code a launcher runs beside it is the manifest's own: pinned, and a change to it is named.
  await writeFiles(dir.path, { "tools/lib/helper.py": "print(2)\n", "deno.json": "{}" });
  const changed = await content(dir.path);
  assert.notEqual(changed.digest, first.digest);
  assert.deepEqual(describeChanges(first.summary, changed.summary), [
    "~ file tools/lib/helper.py changed",
    "+ file deno.json added",
  ]);
  for (
    const [what, files] of [
      ["a program", { "tools/bin/a": "#!/bin/sh\necho '{ }'\n" }],
      ["a profile", { "permissions/mine.json": { write: [".", "/root"] } }],
      ["the manifest's text", { "tools.json": { ...MANIFEST, $schema: "x" } }],
    ] as const
  ) {
    const before = (await content(dir.path)).digest;
    await writeFiles(dir.path, files);
    assert.notEqual((await content(dir.path)).digest, before, what);
  }
});

Deno.test("trust: a change reads as what changed; a new manifest as every tool", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, PROJECT);
  const before = (await content(dir.path)).summary;
  assert.deepEqual(describeChanges(undefined, before).map((line) => line.slice(0, 5)), ["+ a: ", "+ b: "]);
  assert.deepEqual(describeChanges(before, before), []);
  await writeFiles(dir.path, {
    "tools.json": {
      tools: [
        { name: "b", command: ["./tools/bin/b"], permissions: "workspace" },
        { name: "c", command: ["./tools/bin/a"], permissions: { net: ["api.example.com"] } },
      ],
    },
    "tools/bin/b": "#!/bin/sh\necho changed\n",
  });
  const lines = describeChanges(before, (await content(dir.path)).summary);
  assert.equal(lines.length, 5, lines.join("\n"));
  assert.match(lines[0], /^~ b: command \["\.\/tools\/bin\/b","--flag"\] -> \["\.\/tools\/bin\/b"\]$/);
  assert.match(
    lines[1],
    /^~ b: profile mine -> workspace \(was: writes \.; no network; now: writes \.; no network\)$/,
  );
  assert.match(
    lines[2],
    /^~ b: program .*\/tools\/bin\/b changed \(sha256:[0-9a-f]{12} -> sha256:[0-9a-f]{12}\)$/,
  );
  assert.match(
    lines[3],
    /^\+ added c: \["\.\/tools\/bin\/a"\], profile inline \(writes nothing; hosts api\.example\.com\)/,
  );
  assert.equal(lines[4], "- removed a");
  // Only a description changed: said as such.
  const now = await content(dir.path);
  const text = JSON.parse(await Deno.readTextFile(join(dir.path, "tools.json")));
  text.tools[0].description = "new words";
  await writeFiles(dir.path, { "tools.json": text });
  assert.deepEqual(describeChanges(now.summary, (await content(dir.path)).summary), [
    "~ the manifest's other fields changed (descriptions, schemas, limits or variables)",
  ]);
});

Deno.test("trust: an MCP server's profile is trusted as a tool's is: its named profile's file widened since is a change, named", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": { tools: [], mcpServers: { s: { command: "/bin/cat", permissions: "mine" } } },
    "permissions/mine.json": { write: [], net: false },
  });
  const before = await content(dir.path);
  assert.match(
    describeChanges(undefined, before.summary)[0],
    /^\+ server s: \["\/bin\/cat"\], profile mine \(writes nothing; no network\)/,
  );
  // The manifest's bytes are the same; only the profile's file lets the server write and reach the network now.
  await writeFiles(dir.path, { "permissions/mine.json": { write: ["."], net: true } });
  const after = await content(dir.path);
  assert.notEqual(
    after.digest,
    before.digest,
    "a widened server profile is not the content the user trusted",
  );
  assert.deepEqual(describeChanges(before.summary, after.summary), [
    "~ server s: profile mine changed (was: writes nothing; no network; now: writes .; any host)",
  ]);
  // Another profile named: said as such.
  await writeFiles(dir.path, {
    "tools.json": { tools: [], mcpServers: { s: { command: "/bin/cat", permissions: "none" } } },
  });
  assert.match(
    describeChanges(after.summary, (await content(dir.path)).summary)[0],
    /^~ server s: profile mine -> none /,
  );
});

Deno.test("trust: a FIFO or a folder named as a program is never opened; it cannot be pinned", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, { "tools.json": MANIFEST, "permissions/mine.json": {} });
  await Deno.mkdir(join(dir.path, "tools", "bin"), { recursive: true });
  const mkfifo = await new Deno.Command("mkfifo", { args: [join(dir.path, "tools", "bin", "a")] }).output();
  assert.ok(mkfifo.success);
  await Deno.mkdir(join(dir.path, "tools", "bin", "b"));
  const read = await content(dir.path);
  assert.deepEqual(read.summary.tools.map((t) => t.programDigest), [
    "not a regular file",
    "not a regular file",
  ]);
  assert.equal(read.programs.size, 0);
});

Deno.test("trust: records are keyed by real path, replaced whole, refused when others could have written them", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": MANIFEST,
    "permissions/mine.json": {},
    "tools/bin/a": "#!/bin/sh\n",
    "tools/bin/b": "#!/bin/sh\n",
  });
  const read = await content(dir.path);
  const stateDir = join(state.path, "toolgate");
  assert.equal(readTrustRecord(stateDir, read.realPath), undefined);
  const written = writeTrustRecord(stateDir, read, new Date("2030-01-02T03:04:05Z"));
  assert.deepEqual(readTrustRecord(stateDir, read.realPath), written);
  assert.equal(written.trustedAt, "2030-01-02T03:04:05.000Z");
  // Through a link to the folder, the same manifest and the same record.
  const link = join(state.path, "link");
  await Deno.symlink(dir.path, link);
  assert.equal((await readManifestContent(join(link, "tools.json")))?.realPath, read.realPath);
  assert.equal(readTrustRecord(stateDir, join(dir.path, "other.json")), undefined);
  // A record open to others is refused, never trusted (the launcher's lenient read only narrows its grants).
  const [file] = [...Deno.readDirSync(trustDir(stateDir))].map((entry) =>
    join(trustDir(stateDir), entry.name)
  );
  await Deno.chmod(file, 0o644);
  assert.throws(() => readTrustRecord(stateDir, read.realPath), StateDirError);
  assert.equal(readTrustRecord(stateDir, read.realPath, { strict: false })?.digest, read.digest);
  assert.equal(forgetTrust(stateDir, read.realPath), true);
  assert.equal(forgetTrust(stateDir, read.realPath), false);
});

Deno.test("trust: a pinned program stays pinned while untouched, and not once its bytes change", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, {
    "tools.json": MANIFEST,
    "permissions/mine.json": {},
    "tools/bin/a": "#!/bin/sh\necho one\n",
    "tools/bin/b": "#!/bin/sh\n",
  });
  const program = join(dir.path, "tools", "bin", "a");
  const pinned = (await content(dir.path)).programs.get(program);
  assert.ok(pinned);
  assert.equal(await stillPinned(program, pinned), true);
  // Touched but the same bytes (a checkout rewrote it): still the program that was trusted.
  await Deno.writeTextFile(program, "#!/bin/sh\necho one\n");
  assert.equal(await stillPinned(program, pinned), true);
  await Deno.writeTextFile(program, "#!/bin/sh\necho two\n");
  assert.equal(await stillPinned(program, pinned), false);
  await Deno.remove(program);
  assert.equal(await stillPinned(program, pinned), false);
});

Deno.test("trust: a program pinned just after it was written is vouched for by its stamp once settled, and still caught when rewritten", async () => {
  await using dir = await tempDir();
  const program = join(dir.path, "tool");
  await Deno.writeTextFile(program, "#!/bin/sh\necho one\n");
  const pinned = await pinFile(program);
  if (typeof pinned === "string") throw new Error(pinned);
  // Pinned within a timestamp's tick of its write: its times alone cannot vouch for it.
  assert.equal(pinned.racy, true);
  await new Promise((resolve) => setTimeout(resolve, RACY_MS + 100));
  // Read again whole, the same bytes: from now on its stamp vouches for them.
  assert.equal(await stillPinned(program, pinned), true);
  assert.equal(await stillPinned(program, pinned), true);
  // The same size, its modification time set back: its change time moved, so it is read again and refused.
  const times = await Deno.stat(program);
  await Deno.writeTextFile(program, "#!/bin/sh\necho two\n");
  await Deno.utime(program, times.atime!, times.mtime!);
  assert.equal(await stillPinned(program, pinned), false);
  // Its bytes back as pinned: the same program again.
  await Deno.writeTextFile(program, "#!/bin/sh\necho one\n");
  assert.equal(await stillPinned(program, pinned), true);
});

Deno.test("trust: a planted name, path or file name cannot add or hide a line of the announcement", async () => {
  await using dir = await tempDir();
  const fake = '\n  + look: ["./tools/bin/look"], profile none (writes nothing; no network)';
  await writeFiles(dir.path, {
    "tools.json": {
      tools: [{ name: `x${fake}`, command: ["./tools/bin/x"], permissions: { write: [`/root${fake}`] } }],
    },
    "tools/bin/x": "#!/bin/sh\n",
  });
  const before = (await content(dir.path)).summary;
  const [line] = describeChanges(undefined, before);
  assert.ok(!line.includes("\n"), line);
  assert.match(line, /^\+ "x\\n {2}\+ look: /);
  assert.match(line, /writes "\/root\\n/);
  await writeFiles(dir.path, { [`tools/lib/a${fake}`]: "x" });
  const lines = describeChanges(before, (await content(dir.path)).summary);
  assert.equal(lines.length, 1);
  assert.ok(!lines[0].includes("\n"), lines[0]);
});

Deno.test("trust: kept digests spare reading settled files; a file changed since, even with its size and mtime put back, is read again", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, PROJECT);
  const state = join(dir.path, "state");
  await Deno.mkdir(state, { mode: 0o700 });
  const manifest = join(dir.path, "tools.json");
  // A file changed within the racy window is never kept: wait until the files have settled.
  await new Promise((resolve) => setTimeout(resolve, 2100));
  const first = await content(dir.path);
  const a = join(await Deno.realPath(dir.path), "tools", "bin", "a");
  // Each file once: the program `a` is also one of the manifest's own files, and is kept once.
  assert.deepEqual([...first.digests.keys()].filter((path) => path === a), [a]);
  keepDigests(state, first.realPath, new Map(), first.digests);
  const known = readKnownDigests(state, first.realPath);
  assert.deepEqual(known, first.digests);
  // What is kept stands in for the bytes of an untouched file: a planted digest shows it is used, not re-read.
  const planted = new Map(known);
  const [stamp] = known.get(a)!.split(" ");
  planted.set(a, `${stamp} sha256:${"0".repeat(64)}`);
  const spared = await readManifestContent(manifest, () => planted);
  assert.equal(spared?.summary.tools[0].programDigest, `sha256:${"0".repeat(64)}`);
  // The same bytes, re-read, match what was kept.
  assert.equal((await readManifestContent(manifest, () => known))?.digest, first.digest);
  // Changed in place, same size, mtime put back: its ctime moved, so it is read again and the digest differs.
  const before = await Deno.stat(a);
  await Deno.writeTextFile(a, "#!/bin/sh\necho '{!'\n");
  await Deno.utime(a, before.atime!, before.mtime!);
  const after = await readManifestContent(manifest, () => planted);
  assert.notEqual(after?.summary.tools[0].programDigest, `sha256:${"0".repeat(64)}`);
  assert.notEqual(after?.digest, first.digest);
  // A kept file that is not this user's private file is not used.
  await Deno.chmod(
    join(trustDir(state), (await Array.fromAsync(Deno.readDir(trustDir(state))))[0].name),
    0o644,
  );
  assert.equal(readKnownDigests(state, first.realPath).size, 0);
});
