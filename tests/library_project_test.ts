/**
 * The library can be used from another project (issue 43): the package publishes (`deno publish --dry-run`), its
 * graph holds only what it ships, the belt's data in `src/` is the one generated from `tools.json` and
 * `tools/deno_flags.ts`, and docs/library.md's first example runs from a project of its own, importing toolgate
 * by path and from a local copy of the files `deno publish` would ship.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { beltDataText, generatedBeltData } from "../tools/belt_data.ts";
import { fencedBlocks } from "./readme_blocks.ts";
import { REPO, runProgram, tempDir } from "./support.ts";

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** `deno publish --dry-run` here: its exit, its output, and the files it would ship (absolute paths). */
async function dryRun(): Promise<{ code: number; out: string; files: string[] }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: REPO,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = decode(out.stdout) + decode(out.stderr);
  const files = [...text.matchAll(/^\s+(file:\/\/\S+)/gm)].map(([, url]) =>
    decodeURIComponent(new URL(url).pathname)
  );
  return { code: out.code, out: text, files };
}

const PUBLISHED = await dryRun();

Deno.test("library: deno publish --dry-run passes, and the package ships no file from outside its list", () => {
  assert.equal(PUBLISHED.code, 0, PUBLISHED.out);
  assert.match(PUBLISHED.out, /Dry run complete/);
  assert.ok(PUBLISHED.files.includes(join(REPO, "src", "mod.ts")), PUBLISHED.out);
  assert.ok(PUBLISHED.files.includes(join(REPO, "src", "manifest", "belt_data.ts")), PUBLISHED.out);
  const outside = PUBLISHED.files.filter((file) =>
    !/^(src\/|permissions\/|tools\.schema\.json$|README\.md$|LICENSE$|deno\.json$)/.test(
      file.slice(REPO.length + 1),
    )
  );
  assert.deepEqual(outside, []);
});

Deno.test("library: src/manifest/belt_data.ts is the one generated from tools.json and tools/deno_flags.ts", async () => {
  const committed = await Deno.readTextFile(join(REPO, "src", "manifest", "belt_data.ts"));
  assert.equal(await generatedBeltData(), committed, "regenerate it: deno task belt-data");
  // And a change to the belt is a change of the generated text.
  const manifest = await Deno.readTextFile(join(REPO, "tools.json"));
  assert.notEqual(beltDataText(manifest.replace('"get_time"', '"get_the_time"')), beltDataText(manifest));
});

Deno.test("library: no module of src/ imports a bare specifier only toolgate's own deno.json maps", async () => {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", join(REPO, "src", "mod.ts")],
    cwd: REPO,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(info.success, decode(info.stderr));
  const graph = JSON.parse(decode(info.stdout)) as {
    modules: { specifier: string; dependencies?: { specifier: string }[] }[];
  };
  const bare = graph.modules.flatMap((module) =>
    (module.dependencies ?? [])
      .filter((dep) => !/^(\.|\/|node:|npm:|https?:|file:)/.test(dep.specifier))
      .map((dep) => `${module.specifier.replace(`file://${REPO}/`, "")}: ${dep.specifier}`)
  );
  assert.deepEqual(bare, []);
});

/** docs/library.md's first example, importing toolgate from `mod`. */
async function libraryExample(mod: string): Promise<string> {
  const page = "docs/library.md";
  const block = fencedBlocks(await Deno.readTextFile(join(REPO, page)), page).find((b) => b.lang === "ts");
  assert.ok(block, "docs/library.md has a ts example");
  const code = block.lines.map((line) => line.text).join("\n");
  assert.match(code, /from "\.\/src\/mod\.ts"/);
  return code.replace(`from "./src/mod.ts"`, `from ${JSON.stringify(mod)}`);
}

/** A project of its own: a tools.json with get_time and exec, as small scripts, and `main.ts`. */
async function project(dir: string, code: string): Promise<void> {
  const bin = join(dir, "tools", "bin");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.writeTextFile(
    join(bin, "get_time"),
    '#!/bin/sh\nprintf \'{"timezone":"UTC","iso8601":"%s"}\\n\' "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)"\n',
    { mode: 0o755 },
  );
  await Deno.writeTextFile(join(bin, "exec"), "#!/bin/sh\necho '{}'\n", { mode: 0o755 });
  const object = { type: "object", additionalProperties: true };
  await Deno.writeTextFile(
    join(dir, "tools.json"),
    JSON.stringify({
      tools: [
        {
          name: "get_time",
          description: "The time.",
          command: ["./tools/bin/get_time"],
          schema: object,
          readOnly: true,
        },
        { name: "exec", description: "Runs a program.", command: ["./tools/bin/exec"], schema: object },
      ],
    }),
  );
  await Deno.writeTextFile(join(dir, "main.ts"), code);
}

/** Runs the project's `main.ts` there (no deno.json of its own, no import map) and reads its two envelopes. */
async function runProject(dir: string): Promise<{ ok: boolean; kind?: string }[]> {
  const run = await runProgram(Deno.execPath(), ["run", "--check", "--allow-all", "main.ts"], {
    cwd: dir,
    env: { NO_COLOR: "1", DENO_NO_PACKAGE_JSON: "1" },
  });
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const lines = run.stdout.split("\n").filter((line) => line !== "");
  assert.equal(lines.length, 2, run.stdout);
  return lines.map((line) => JSON.parse(line));
}

Deno.test("library: docs/library.md's first example runs from a project of its own, importing toolgate by path", async () => {
  await using dir = await tempDir();
  await project(dir.path, await libraryExample(join(REPO, "src", "mod.ts")));
  const [time, refused] = await runProject(dir.path);
  assert.equal(time.ok, true, JSON.stringify(time));
  assert.equal(refused.ok, false);
  assert.equal(refused.kind, "rejected");
});

Deno.test("library: docs/library.md's first example runs from a project of its own, importing a copy of what deno publish ships", async () => {
  assert.equal(PUBLISHED.code, 0, PUBLISHED.out);
  await using dir = await tempDir();
  const copy = join(dir.path, "vendor", "toolgate");
  for (const file of PUBLISHED.files) {
    const target = join(copy, file.slice(REPO.length + 1));
    await Deno.mkdir(dirname(target), { recursive: true });
    await Deno.copyFile(file, target);
  }
  await project(dir.path, await libraryExample("./vendor/toolgate/src/mod.ts"));
  const [time, refused] = await runProject(dir.path);
  assert.equal(time.ok, true, JSON.stringify(time));
  assert.equal(refused.kind, "rejected");
});
