/** fs_remove: files, symlinks, directories (recursive only when asked), never the workspace, and confinement. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

Deno.test("fs_remove: removes a file and an empty directory", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "a");
    assert.deepEqual(assertOk(await runTool("fs_remove", { path: "a.txt" }, { cwd: w.ws })), {
      path: "a.txt",
      removed: true,
      type: "file",
    });
    await assert.rejects(Deno.stat(join(w.ws, "a.txt")), Deno.errors.NotFound);
    await Deno.mkdir(join(w.ws, "empty"));
    assert.equal(assertOk(await runTool("fs_remove", { path: "empty" }, { cwd: w.ws })).type, "directory");
  });
});

Deno.test("fs_remove: a non-empty directory only when recursive is asked", async () => {
  await withWorkspace(async (w) => {
    await w.write("tree/a/b.txt", "b");
    assertFailure(await runTool("fs_remove", { path: "tree" }, { cwd: w.ws }), "invalid_args", "recursive");
    assert.equal(await w.read("tree/a/b.txt"), "b");
    assertOk(await runTool("fs_remove", { path: "tree", recursive: true }, { cwd: w.ws }));
    await assert.rejects(Deno.stat(join(w.ws, "tree")), Deno.errors.NotFound);
  });
});

Deno.test("fs_remove: a recursive removal unlinks symlinks inside the tree without following them", async () => {
  await withWorkspace(async (w) => {
    await w.write("sub/keep.txt", "keep");
    await Deno.mkdir(join(w.ws, "tree"));
    await Deno.symlink("../sub", join(w.ws, "tree", "to_sub"));
    assertOk(await runTool("fs_remove", { path: "tree", recursive: true }, { cwd: w.ws }));
    assert.equal(await w.read("sub/keep.txt"), "keep");
  });
});

Deno.test("fs_remove: an inside symlink is removed itself, not its target", async () => {
  await withWorkspace(async (w) => {
    await w.write("sub/keep.txt", "keep");
    assert.equal(assertOk(await runTool("fs_remove", { path: "in_link" }, { cwd: w.ws })).type, "symlink");
    await assert.rejects(Deno.lstat(join(w.ws, "in_link")), Deno.errors.NotFound);
    assert.equal(await w.read("sub/keep.txt"), "keep");
  });
});

Deno.test("fs_remove: the workspace itself is refused, however it is named; a link to it goes, not it", async () => {
  await withWorkspace(async (w) => {
    await Deno.symlink(".", join(w.ws, "self"));
    for (const path of [".", "./", "sub/.."]) {
      const run = await runTool("fs_remove", { path, recursive: true }, { cwd: w.ws });
      assertFailure(run, "invalid_args", "path");
    }
    // A symlink is removed itself, never its target: here the target is the workspace.
    const link = assertOk(await runTool("fs_remove", { path: "self", recursive: true }, { cwd: w.ws }));
    assert.equal(link.type, "symlink");
    await assert.rejects(Deno.lstat(join(w.ws, "self")), Deno.errors.NotFound);
    assert.ok((await Deno.stat(join(w.ws, "sub"))).isDirectory);
  });
});

Deno.test("fs_remove: a symlink that points outside is removed itself, and its target stays", async () => {
  await withWorkspace(async (w) => {
    const before = await w.outsideSnapshot();
    for (const path of ["out", "sub/out", "dangling"]) {
      const result = assertOk(await runTool("fs_remove", { path, recursive: true }, { cwd: w.ws }));
      assert.deepEqual(result, { path, removed: true, type: "symlink" });
      await assert.rejects(Deno.lstat(join(w.ws, path)), Deno.errors.NotFound, path);
    }
    assert.deepEqual(await w.outsideSnapshot(), before, "the targets outside are untouched");
    assert.equal(await Deno.readTextFile(join(w.outside, "secret.txt")), "secret\n");
  });
});

Deno.test("fs_remove: a missing path is not_found", async () => {
  await withWorkspace(async (w) => {
    assertFailure(await runTool("fs_remove", { path: "ghost.txt" }, { cwd: w.ws }), "not_found", "path");
  });
});

Deno.test("fs_remove: escapes out of the workspace are refused and remove nothing", async () => {
  // A final symlink out is the link itself, inside: removing it is covered above.
  await assertEscapesRefused("fs_remove", (path) => ({ path, recursive: true }), "path", [
    "final symlink out",
    "dangling symlink out",
  ]);
});
