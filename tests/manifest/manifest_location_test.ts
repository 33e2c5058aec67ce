/**
 * Which manifest a run uses (issue 23, item 4): `--tools`, else `TOOLGATE_TOOLS`, else the nearest `tools.json`
 * up to the project's root (the first folder holding `.git`, or the home folder), else the built-in belt; one
 * line on stderr says which when it is not `./tools.json`; the launcher and the commands agree.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  locateManifest,
  manifestNotice,
  needsTrust,
  searchedFolders,
} from "../../src/manifest/manifest_location.ts";
import { planLaunch } from "../../src/launcher/launch_plan.ts";
import { BELT_MANIFEST_PATH } from "../../src/manifest/tool_belt.ts";
import { REPO, runToolgate, writeManifest } from "../support.ts";

/** A project (a `.git` folder, a manifest at its root) inside a folder that has a manifest of its own. */
async function project() {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_where_" }));
  const project = join(root, "project");
  const sub = join(project, "src", "deep");
  await Deno.mkdir(sub, { recursive: true });
  await Deno.mkdir(join(project, ".git"));
  const manifest = await writeManifest(
    project,
    { tools: [{ name: "here", command: ["./tools/bin/here"] }] },
    [
      "here",
    ],
  );
  // Above the project's root: never picked up from inside the project.
  await writeManifest(root, { tools: [{ name: "above", command: ["./tools/bin/above"] }] }, ["above"]);
  return {
    root,
    project,
    sub,
    manifest,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

Deno.test("which manifest: --tools, then TOOLGATE_TOOLS, then the nearest tools.json up to the project's root", async () => {
  await using p = await project();
  assert.deepEqual(locateManifest("x.json", { TOOLGATE_TOOLS: "y.json" }, p.sub), {
    path: join(p.sub, "x.json"),
    source: "tools",
  });
  assert.deepEqual(locateManifest(undefined, { TOOLGATE_TOOLS: "y.json" }, p.sub), {
    path: join(p.sub, "y.json"),
    source: "env",
  });
  assert.deepEqual(locateManifest(undefined, {}, p.sub), { path: p.manifest, source: "found" });
  assert.deepEqual(searchedFolders(p.sub, undefined), [p.sub, join(p.project, "src"), p.project]);
  // The home folder bounds the search as .git does.
  assert.deepEqual(searchedFolders(p.sub, join(p.project, "src")), [p.sub, join(p.project, "src")]);
  // Without a project root above, only the folder itself: the manifest in `root` is not found from below it.
  const loose = join(p.root, "loose");
  await Deno.mkdir(loose);
  assert.deepEqual(searchedFolders(loose, "/nonexistent"), [loose]);
  assert.deepEqual(locateManifest(undefined, { HOME: "/nonexistent" }, loose), {
    path: BELT_MANIFEST_PATH,
    source: "belt",
  });
  // The .git of the project stops the search: the manifest above it is never the project's.
  await Deno.remove(p.manifest);
  assert.equal(locateManifest(undefined, {}, p.sub).source, "belt");
});

Deno.test("which manifest: one line says which, unless it is ./tools.json or named with --tools", () => {
  const found = { path: "/srv/p/tools.json", source: "found" } as const;
  assert.equal(manifestNotice(found, "/srv/p"), undefined);
  assert.equal(manifestNotice(found, "/srv/p/src"), "toolgate: using the manifest /srv/p/tools.json");
  assert.equal(manifestNotice({ path: "/a/t.json", source: "tools" }, "/srv/p"), undefined);
  assert.match(
    manifestNotice({ path: "/a/t.json", source: "env" }, "/srv/p")!,
    /\/a\/t\.json \(TOOLGATE_TOOLS\)/,
  );
  assert.match(
    manifestNotice({ path: BELT_MANIFEST_PATH, source: "belt" }, "/srv/p")!,
    /the built-in tool belt/,
  );
  // Only a manifest found in the folders is held to trust; toolgate's own is its code.
  assert.equal(needsTrust(found), true);
  assert.equal(needsTrust({ path: "/a/t.json", source: "tools" }), false);
  assert.equal(needsTrust({ path: join(REPO, "tools.json"), source: "found" }), false);
});

Deno.test("which manifest: from a subfolder, the project's tools.json is used, the launcher agrees, and stderr names it", async () => {
  await using p = await project();
  const env = { XDG_STATE_HOME: join(p.root, "state"), TOOLGATE_TOOLS: "" };
  const listed = await runToolgate(["list", "--format", "names"], p.sub, env);
  assert.equal(listed.code, 0, listed.stderr);
  assert.equal(listed.stdout, "here\n");
  assert.equal(listed.stderr, `toolgate: using the manifest ${p.manifest}\n`);
  // The launcher grants reading that manifest's folder: the one the command then loads.
  const plan = await planLaunch(["list"], { ...env, PATH: "/usr/bin:/bin" }, p.sub);
  assert.equal(plan.facts.manifestPath, p.manifest);
  assert.ok(plan.set.read.includes(p.project));
  // The workspace stays the folder typed in.
  assert.equal(plan.facts.workspace, p.sub);
});

Deno.test("which manifest: toolgate's own tools.json, found from a folder of its checkout, runs with no question", async () => {
  const state = await Deno.makeTempDir();
  try {
    const call = await runToolgate(["call", "get_time", '{"timezone":"UTC"}'], join(REPO, "tests"), {
      XDG_STATE_HOME: state,
      TOOLGATE_TOOLS: "",
    });
    assert.equal(call.code, 0, call.stdout + call.stderr);
    assert.equal(JSON.parse(call.stdout).result.timezone, "UTC");
    assert.match(call.stderr, new RegExp(`^toolgate: using the manifest ${join(REPO, "tools.json")}\n`));
    assert.doesNotMatch(call.stderr, /not trusted|toolgate trust/);
  } finally {
    await Deno.remove(state, { recursive: true });
  }
});
