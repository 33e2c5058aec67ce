import assert from "node:assert/strict";
import { join } from "node:path";
import { checkServers } from "../manifest/server_spec.ts";
import { stateRoot } from "../state/state.ts";
import { installedServer } from "./installed_server.ts";
import { serverEntryOf } from "./package_entry.ts";
import { type InstalledPackage, removeTree, requestOf, setWritable, writeInstalls } from "./package_store.ts";
import { treeDigest } from "./tree_digest.ts";

const MANIFEST = "/srv/project/tools.json";

/** A state folder, an install folder holding one bin, and its record for the server `mem`, as trust writes them. */
function installed(args: string[], allowScripts = false) {
  const home = Deno.makeTempDirSync();
  const env = { HOME: home, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" };
  const dir = join(home, "install");
  Deno.mkdirSync(join(dir, "node_modules", "pkg"), { recursive: true });
  const program = join(dir, "node_modules", "pkg", "index.js");
  Deno.writeTextFileSync(program, "console.log('hi')\n");
  setWritable(dir, false);
  const entry = serverEntryOf("npx", args);
  if (entry.kind !== "package") throw new Error("not a package entry");
  const tree = treeDigest(dir);
  const install: InstalledPackage = {
    request: requestOf(entry, allowScripts),
    ecosystem: "npm",
    name: "pkg",
    version: "1.0.0",
    lock: { "pkg@1.0.0": "sha512-x" },
    dir,
    digest: tree.digest,
    stamp: tree.stamp,
    runtime: "node",
    program,
    reads: [],
    installedAt: new Date(0).toISOString(),
  };
  writeInstalls(stateRoot(env), MANIFEST, { mem: install });
  return { env, dir, program, home };
}

function server(args: string[]) {
  const errors: string[] = [];
  const [spec] = checkServers(
    { mem: { command: "npx", args, permissions: { read: ["/data"] } } },
    "/srv/project",
    new Map(),
    errors,
    [],
  );
  assert.deepEqual(errors, []);
  return spec;
}

Deno.test("installed server: runs its pinned install under node, reading the install besides its profile's reads", () => {
  const { env, dir, program, home } = installed(["-y", "pkg", "/data"]);
  try {
    const spec = installedServer(server(["-y", "pkg", "/data"]), { env, manifest: MANIFEST });
    assert.ok(typeof spec !== "string", String(spec));
    assert.match(spec.command!, /\/node$/);
    assert.deepEqual(spec.args, [program, "/data"]);
    assert.deepEqual(spec.profile.read, ["/data", dir]);
  } finally {
    removeTree(home);
  }
});

Deno.test("installed server: a changed file of the install, another entry, or another manifest is not started", () => {
  const { env, program, home } = installed(["-y", "pkg"]);
  try {
    assert.match(
      installedServer(server(["-y", "pkg@2.0.0"]), { env, manifest: MANIFEST }) as string,
      /npx pkg@2\.0\.0 is not installed: run `toolgate trust`/,
    );
    assert.match(
      installedServer(server(["-y", "pkg"]), { env, manifest: "/srv/other/tools.json" }) as string,
      /not installed/,
    );
    assert.match(installedServer(server(["-y", "pkg"]), { env }) as string, /not installed/);
    setWritable(program, true);
    Deno.writeTextFileSync(program, "console.log('changed')\n");
    assert.match(
      installedServer(server(["-y", "pkg"]), { env, manifest: MANIFEST }) as string,
      /the install of pkg@1\.0\.0 in .* changed since toolgate installed it, so it was not started/,
    );
  } finally {
    removeTree(home);
  }
});

Deno.test("installed server: a touched but unchanged install still starts (its bytes are read when its stamp moved)", () => {
  const { env, program, home } = installed(["-y", "pkg"]);
  try {
    setWritable(program, true);
    setWritable(program, false);
    assert.ok(typeof installedServer(server(["-y", "pkg"]), { env, manifest: MANIFEST }) !== "string");
  } finally {
    removeTree(home);
  }
});
