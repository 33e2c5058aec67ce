/** fs_mkdir: creating directories, parents only when asked, idempotence, and workspace confinement. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

Deno.test("fs_mkdir: creates a directory; an existing one is not an error", async () => {
  await withWorkspace(async (w) => {
    assert.deepEqual(assertOk(await runTool("fs_mkdir", { path: "notes" }, { cwd: w.ws })), {
      path: "notes",
      created: true,
    });
    assert.ok((await Deno.stat(join(w.ws, "notes"))).isDirectory);
    assert.deepEqual(assertOk(await runTool("fs_mkdir", { path: "notes/" }, { cwd: w.ws })), {
      path: "notes",
      created: false,
    });
  });
});

Deno.test("fs_mkdir: parents are created only when asked", async () => {
  await withWorkspace(async (w) => {
    assertFailure(await runTool("fs_mkdir", { path: "a/b/c" }, { cwd: w.ws }), "not_found", "path");
    await assert.rejects(Deno.stat(join(w.ws, "a")), Deno.errors.NotFound);
    assertOk(await runTool("fs_mkdir", { path: "a/b/c", parents: true }, { cwd: w.ws }));
    assert.ok((await Deno.stat(join(w.ws, "a/b/c"))).isDirectory);
  });
});

Deno.test("fs_mkdir: an existing file is refused; through an inside symlink works", async () => {
  await withWorkspace(async (w) => {
    await w.write("f.txt", "");
    assertFailure(await runTool("fs_mkdir", { path: "f.txt" }, { cwd: w.ws }), "invalid_args", "path");
    assertOk(await runTool("fs_mkdir", { path: "in_link/made" }, { cwd: w.ws }));
    assert.ok((await Deno.stat(join(w.ws, "sub/made"))).isDirectory);
  });
});

Deno.test("fs_mkdir: escapes out of the workspace are refused and create nothing", async () => {
  await assertEscapesRefused("fs_mkdir", (path) => ({ path, parents: true }));
});
