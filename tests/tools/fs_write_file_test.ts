/** fs_write_file: atomic whole-file writes, parents only when asked, base64, and workspace confinement. */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  assertEscapesRefused,
  assertFailure,
  assertOk,
  makeFifo,
  runTool,
  sha256,
  withWorkspace,
} from "./helpers.ts";

Deno.test("fs_write_file: creates a file and reports its size and sha256", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(
      await runTool("fs_write_file", { path: "new.txt", content: "hello\n" }, { cwd: w.ws }),
    );
    assert.deepEqual(result, { path: "new.txt", bytes: 6, created: true, sha256: await sha256("hello\n") });
    assert.equal(await w.read("new.txt"), "hello\n");
    const empty = assertOk(await runTool("fs_write_file", { path: "empty.txt", content: "" }, { cwd: w.ws }));
    assert.equal(empty.bytes, 0);
    assert.equal(await w.read("empty.txt"), "");
  });
});

Deno.test("fs_write_file: replaces a file atomically (a new inode by rename), keeping its mode, leaving no temp file", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "old");
    await Deno.chmod(join(w.ws, "a.txt"), 0o600);
    // A hard link keeps the old inode: an in-place write would change it too, a rename does not.
    await Deno.link(join(w.ws, "a.txt"), join(w.ws, "sub", "old_inode.txt"));
    const result = assertOk(await runTool("fs_write_file", { path: "a.txt", content: "new" }, { cwd: w.ws }));
    assert.equal(result.created, false);
    assert.equal(await w.read("a.txt"), "new");
    assert.equal(await w.read("sub/old_inode.txt"), "old");
    assert.equal((await Deno.stat(join(w.ws, "a.txt"))).mode! & 0o777, 0o600);
    const names = [];
    for await (const entry of Deno.readDir(w.ws)) names.push(entry.name);
    assert.deepEqual(names.filter((n) => n.endsWith(".tmp")), []);
  });
});

Deno.test("fs_write_file: parents are created only when asked", async () => {
  await withWorkspace(async (w) => {
    const refused = await runTool("fs_write_file", { path: "x/y/z.txt", content: "z" }, { cwd: w.ws });
    assertFailure(refused, "not_found", "path");
    await assert.rejects(Deno.stat(join(w.ws, "x")), Deno.errors.NotFound);
    assertOk(
      await runTool("fs_write_file", { path: "x/y/z.txt", content: "z", create_parents: true }, {
        cwd: w.ws,
      }),
    );
    assert.equal(await w.read("x/y/z.txt"), "z");
  });
});

Deno.test("fs_write_file: base64 content, and invalid base64", async () => {
  await withWorkspace(async (w) => {
    const content = btoa(String.fromCharCode(0, 255, 10));
    assertOk(await runTool("fs_write_file", { path: "b.bin", content, encoding: "base64" }, { cwd: w.ws }));
    assert.deepEqual(await Deno.readFile(join(w.ws, "b.bin")), new Uint8Array([0, 255, 10]));
    assertFailure(
      await runTool("fs_write_file", { path: "c.bin", content: "!!!", encoding: "base64" }, { cwd: w.ws }),
      "invalid_args",
      "content",
    );
  });
});

Deno.test("fs_write_file: a directory, the workspace itself and missing content are refused", async () => {
  await withWorkspace(async (w) => {
    assertFailure(
      await runTool("fs_write_file", { path: "sub", content: "x" }, { cwd: w.ws }),
      "invalid_args",
      "path",
    );
    assertFailure(
      await runTool("fs_write_file", { path: ".", content: "x" }, { cwd: w.ws }),
      "invalid_args",
      "path",
    );
    assertFailure(
      await runTool("fs_write_file", { path: "a.txt" }, { cwd: w.ws }),
      "invalid_args",
      "content",
    );
  });
});

Deno.test("fs_write_file: writes through a symlink that stays inside to its target", async () => {
  await withWorkspace(async (w) => {
    assertOk(await runTool("fs_write_file", { path: "in_link/t.txt", content: "t" }, { cwd: w.ws }));
    assert.equal(await w.read("sub/t.txt"), "t");
  });
});

Deno.test("fs_write_file: escapes out of the workspace are refused and write nothing", async () => {
  await assertEscapesRefused("fs_write_file", (path) => ({ path, content: "pwned", create_parents: true }));
});

Deno.test("fs_write_file: a path ending in / names a directory and is refused, creating nothing", async () => {
  await withWorkspace(async (w) => {
    for (const path of ["newdir/", "newdir/.", "sub/", "x/y/", "sub/new/"]) {
      const run = await runTool("fs_write_file", { path, content: "x", create_parents: true }, { cwd: w.ws });
      assertFailure(run, "invalid_args", "path");
    }
    for (const path of ["newdir", "x", "sub/new"]) {
      await assert.rejects(Deno.lstat(join(w.ws, path)), Deno.errors.NotFound, path);
    }
  });
});

Deno.test("fs_write_file: a FIFO, a socket or a symlink to one is refused at once, and stays", async () => {
  await withWorkspace(async (w) => {
    await makeFifo(join(w.ws, "pipe"));
    await Deno.symlink("pipe", join(w.ws, "pipe_link"));
    const listener = Deno.listen({ transport: "unix", path: join(w.ws, "sock") });
    try {
      for (const path of ["pipe", "pipe_link", "sock"]) {
        const run = await runTool("fs_write_file", { path, content: "x" }, { cwd: w.ws, timeoutMs: 10_000 });
        assertFailure(run, "invalid_args", "path");
      }
      assert.ok((await Deno.lstat(join(w.ws, "pipe"))).isFifo);
      assert.ok((await Deno.lstat(join(w.ws, "sock"))).isSocket);
    } finally {
      listener.close();
    }
  });
});
