/** fs_stat: type, size, mtime and mode, symlinks described as themselves, and workspace confinement. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

Deno.test("fs_stat: a file's type, size, mtime and mode", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "hello");
    await Deno.chmod(join(w.ws, "a.txt"), 0o640);
    const result = assertOk(await runTool("fs_stat", { path: "a.txt" }, { cwd: w.ws }));
    assert.equal(result.path, "a.txt");
    assert.equal(result.type, "file");
    assert.equal(result.size, 5);
    assert.equal(result.mode, "0640");
    const mtime = Date.parse(result.mtime);
    assert.ok(Math.abs(mtime - Date.now()) < 60_000, result.mtime);
  });
});

Deno.test("fs_stat: the workspace itself and a directory", async () => {
  await withWorkspace(async (w) => {
    assert.equal(assertOk(await runTool("fs_stat", { path: "." }, { cwd: w.ws })).type, "directory");
    const sub = assertOk(await runTool("fs_stat", { path: "sub/" }, { cwd: w.ws }));
    assert.equal(sub.type, "directory");
    assert.equal(sub.path, "sub");
  });
});

Deno.test("fs_stat: an inside symlink is reported as a symlink with its target", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(await runTool("fs_stat", { path: "in_link" }, { cwd: w.ws }));
    assert.equal(result.type, "symlink");
    assert.equal(result.target, "sub");
    assert.equal(result.target_type, "directory");
  });
});

Deno.test("fs_stat: a missing path is not_found naming path", async () => {
  await withWorkspace(async (w) => {
    assertFailure(await runTool("fs_stat", { path: "ghost" }, { cwd: w.ws }), "not_found", "path");
    assertFailure(await runTool("fs_stat", {}, { cwd: w.ws }), "invalid_args", "path");
  });
});

Deno.test("fs_stat: escapes out of the workspace are refused", async () => {
  await assertEscapesRefused("fs_stat", (path) => ({ path }));
});
