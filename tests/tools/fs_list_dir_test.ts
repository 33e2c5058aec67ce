/** fs_list_dir: the listing result, recursion, depth, globs, the cap, and workspace confinement. */
import assert from "node:assert/strict";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

Deno.test("fs_list_dir: a listing with ready-to-use relative paths and types, symlinks not followed", async () => {
  await withWorkspace(async (w) => {
    await w.write("b.txt", "b");
    await w.write("sub/deep/c.ts", "c");
    const result = assertOk(await runTool("fs_list_dir", {}, { cwd: w.ws }));
    assert.equal(result.kind, "listing");
    assert.equal(result.path, ".");
    assert.deepEqual(result.entries, [
      { name: "b.txt", path: "b.txt", type: "file" },
      { name: "dangling", path: "dangling", type: "symlink" },
      { name: "in_link", path: "in_link", type: "symlink" },
      { name: "out", path: "out", type: "symlink" },
      { name: "sub", path: "sub", type: "directory" },
    ]);
    assert.equal(result.entry_count, 5);
    assert.equal(result.truncated, false);
    const sub = assertOk(await runTool("fs_list_dir", { path: "sub" }, { cwd: w.ws }));
    assert.deepEqual(sub.entries.map((e: { path: string }) => e.path), ["sub/deep", "sub/out"]);
    // Each entry's path is an argument the next call can take as is.
    const deep = assertOk(await runTool("fs_list_dir", { path: sub.entries[0].path }, { cwd: w.ws }));
    assert.deepEqual(deep.entries, [{ name: "c.ts", path: "sub/deep/c.ts", type: "file" }]);
  });
});

Deno.test("fs_list_dir: recursion goes as deep as max_depth and never through symlinks", async () => {
  await withWorkspace(async (w) => {
    await w.write("sub/deep/deeper/x.txt", "x");
    const all = assertOk(await runTool("fs_list_dir", { path: "sub", recursive: true }, { cwd: w.ws }));
    assert.deepEqual(all.entries.map((e: { path: string }) => e.path), [
      "sub/deep",
      "sub/deep/deeper",
      "sub/deep/deeper/x.txt",
      "sub/out",
    ]);
    const shallow = assertOk(
      await runTool("fs_list_dir", { path: "sub", recursive: true, max_depth: 2 }, { cwd: w.ws }),
    );
    assert.deepEqual(shallow.entries.map((e: { path: string }) => e.path), [
      "sub/deep",
      "sub/deep/deeper",
      "sub/out",
    ]);
    const everything = assertOk(
      await runTool("fs_list_dir", { recursive: true, max_depth: 20 }, { cwd: w.ws }),
    );
    for (const entry of everything.entries) assert.ok(!entry.path.includes("secret"), entry.path);
  });
});

Deno.test("fs_list_dir: a glob filters names, or paths when it has a slash", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.ts", "");
    await w.write("b.md", "");
    await w.write("src/c.ts", "");
    await w.write("src/x/d.ts", "");
    const byName = assertOk(await runTool("fs_list_dir", { recursive: true, glob: "*.ts" }, { cwd: w.ws }));
    assert.deepEqual(byName.entries.map((e: { path: string }) => e.path), ["a.ts", "src/c.ts", "src/x/d.ts"]);
    const byPath = assertOk(
      await runTool("fs_list_dir", { recursive: true, glob: "src/**/*.ts" }, { cwd: w.ws }),
    );
    assert.deepEqual(byPath.entries.map((e: { path: string }) => e.path), ["src/c.ts", "src/x/d.ts"]);
    const braces = assertOk(await runTool("fs_list_dir", { glob: "*.{md,ts}" }, { cwd: w.ws }));
    assert.deepEqual(braces.entries.map((e: { path: string }) => e.path), ["a.ts", "b.md"]);
    assertFailure(await runTool("fs_list_dir", { glob: "{unclosed" }, { cwd: w.ws }), "invalid_args", "glob");
  });
});

Deno.test("fs_list_dir: the cap truncates and says so", async () => {
  await withWorkspace(async (w) => {
    for (let i = 0; i < 12; i++) await w.write(`many/f${String(i).padStart(2, "0")}.txt`, "");
    const result = assertOk(await runTool("fs_list_dir", { path: "many", max_entries: 5 }, { cwd: w.ws }));
    assert.equal(result.entry_count, 5);
    assert.equal(result.entries.length, 5);
    assert.equal(result.truncated, true);
    assert.equal(result.entries[4].path, "many/f04.txt");
    const exact = assertOk(await runTool("fs_list_dir", { path: "many", max_entries: 12 }, { cwd: w.ws }));
    assert.equal(exact.truncated, false);
  });
});

Deno.test("fs_list_dir: an empty directory, a missing one, a file, an inside symlink", async () => {
  await withWorkspace(async (w) => {
    await Deno.mkdir(`${w.ws}/empty`);
    const empty = assertOk(await runTool("fs_list_dir", { path: "empty" }, { cwd: w.ws }));
    assert.deepEqual([empty.entry_count, empty.truncated], [0, false]);
    assertFailure(await runTool("fs_list_dir", { path: "nowhere" }, { cwd: w.ws }), "not_found", "path");
    await w.write("f.txt", "");
    assertFailure(await runTool("fs_list_dir", { path: "f.txt" }, { cwd: w.ws }), "invalid_args", "path");
    const viaLink = assertOk(await runTool("fs_list_dir", { path: "in_link" }, { cwd: w.ws }));
    assert.deepEqual(viaLink.entries.map((e: { path: string }) => e.path), ["in_link/out"]);
  });
});

Deno.test("fs_list_dir: escapes out of the workspace are refused", async () => {
  await assertEscapesRefused("fs_list_dir", (path) => ({ path }));
});
