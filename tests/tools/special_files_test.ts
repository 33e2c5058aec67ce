/**
 * Only regular files and directories are read: a FIFO (which would block its reader until a writer comes), a socket
 * or a device is refused at once with `invalid_args` naming the path, or skipped by a walk, never waited on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertFailure, assertOk, makeFifo, runTool, withWorkspace, type Workspace } from "./helpers.ts";
import { requires } from "../requires.ts";

/** Well under the tools' own timeouts: a tool that blocks on the FIFO is killed and the test fails. */
const QUICK = { timeoutMs: 10_000 };

/** A workspace with `pipe` (a FIFO), `pipe_link` (a symlink to it), `sock` (a listening Unix socket). */
async function withSpecialFiles(body: (w: Workspace) => Promise<void>): Promise<void> {
  await withWorkspace(async (w) => {
    await makeFifo(join(w.ws, "pipe"));
    await Deno.symlink("pipe", join(w.ws, "pipe_link"));
    const listener = Deno.listen({ transport: "unix", path: join(w.ws, "sock") });
    try {
      await body(w);
    } finally {
      listener.close();
    }
  });
}

for (const tool of ["fs_read_file", "fs_read_lines"]) {
  Deno.test(`special files: ${tool} refuses a FIFO, a symlink to one and a socket at once`, async () => {
    await withSpecialFiles(async (w) => {
      for (const path of ["pipe", "pipe_link", "sock"]) {
        const started = Date.now();
        const run = await runTool(tool, { path }, { cwd: w.ws, ...QUICK });
        const envelope = assertFailure(run, "invalid_args", "path");
        assert.match(String(envelope.message), /not a regular file/, path);
        assert.ok(Date.now() - started < 5_000, `${tool} ${path} took ${Date.now() - started} ms`);
      }
    });
  });
}

Deno.test("special files: fs_search refuses a FIFO named as its path, and skips one met in a walk", async () => {
  await withSpecialFiles(async (w) => {
    await w.write("a.txt", "needle\n");
    for (const path of ["pipe", "pipe_link", "sock"]) {
      assertFailure(
        await runTool("fs_search", { pattern: "needle", path }, { cwd: w.ws, ...QUICK }),
        "invalid_args",
        "path",
      );
    }
    const walked = assertOk(await runTool("fs_search", { pattern: "needle" }, { cwd: w.ws, ...QUICK }));
    assert.deepEqual(walked.matches.map((m: { path: string }) => m.path), ["a.txt"]);
    assert.equal(walked.files_searched, 1);
  });
});

Deno.test("special files: fs_list_dir and fs_stat describe them without opening them", async () => {
  await withSpecialFiles(async (w) => {
    const listing = assertOk(await runTool("fs_list_dir", {}, { cwd: w.ws, ...QUICK }));
    const types = Object.fromEntries(
      listing.entries.map((e: { name: string; type: string }) => [e.name, e.type]),
    );
    assert.equal(types.pipe, "other");
    assert.equal(types.sock, "other");
    assert.equal(assertOk(await runTool("fs_stat", { path: "pipe" }, { cwd: w.ws, ...QUICK })).type, "other");
  });
});

Deno.test("special files: a character device in the workspace is refused, not read", async (t) => {
  await withWorkspace(async (w) => {
    // /dev/zero's numbers: reading it would return zeros forever. Creating it needs root (CI runs as root).
    const made = await new Deno.Command("mknod", {
      args: [join(w.ws, "zero"), "c", "1", "5"],
      stderr: "null",
    })
      .output();
    if (made.code !== 0) {
      const ignore = requires("root", "mknod is not permitted here", "special files: a character device");
      await t.step({ name: "mknod is not permitted here", ignore, fn: () => {} });
      return;
    }
    for (const tool of ["fs_read_file", "fs_read_lines"]) {
      assertFailure(await runTool(tool, { path: "zero" }, { cwd: w.ws, ...QUICK }), "invalid_args", "path");
    }
    assertFailure(
      await runTool("fs_search", { pattern: "x", path: "zero" }, { cwd: w.ws, ...QUICK }),
      "invalid_args",
      "path",
    );
  });
});
