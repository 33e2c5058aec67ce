/** fs_edit: unique string replacement, line ranges, the sha256 guard, and workspace confinement. */
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

const SOURCE = "one\ntwo\nthree\nfour\n";

Deno.test("fs_edit: replaces an exact unique string", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", SOURCE);
    const result = assertOk(
      await runTool("fs_edit", { path: "a.txt", old_string: "two\nthree", new_string: "2\n3" }, {
        cwd: w.ws,
      }),
    );
    assert.equal(await w.read("a.txt"), "one\n2\n3\nfour\n");
    assert.deepEqual(result.replaced_lines, { start: 2, end: 3 });
    assert.equal(result.previous_sha256, await sha256(SOURCE));
    assert.equal(result.sha256, await sha256("one\n2\n3\nfour\n"));
  });
});

Deno.test("fs_edit: no match or several matches are refused and leave the file alone", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "x = 1\nx = 1\n");
    const none = assertFailure(
      await runTool("fs_edit", { path: "a.txt", old_string: "y = 2", new_string: "z" }, { cwd: w.ws }),
      "invalid_args",
      "old_string",
    );
    assert.match(String(none.message), /not found/);
    const many = assertFailure(
      await runTool("fs_edit", { path: "a.txt", old_string: "x = 1", new_string: "z" }, { cwd: w.ws }),
      "invalid_args",
      "old_string",
    );
    assert.match(String(many.message), /2 times \(lines 1, 2\)/);
    assert.equal(await w.read("a.txt"), "x = 1\nx = 1\n");
  });
});

Deno.test("fs_edit: replaces a 1-based inclusive line range, keeping line endings", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", SOURCE);
    assertOk(
      await runTool("fs_edit", { path: "a.txt", start_line: 2, end_line: 3, new_string: "TWO-THREE" }, {
        cwd: w.ws,
      }),
    );
    assert.equal(await w.read("a.txt"), "one\nTWO-THREE\nfour\n");
    assertOk(await runTool("fs_edit", { path: "a.txt", start_line: 1, new_string: "" }, { cwd: w.ws }));
    assert.equal(await w.read("a.txt"), "TWO-THREE\nfour\n", "an empty replacement deletes the line");
    await w.write("crlf.txt", "a\r\nb\r\nc");
    assertOk(await runTool("fs_edit", { path: "crlf.txt", start_line: 2, new_string: "B" }, { cwd: w.ws }));
    assert.equal(await w.read("crlf.txt"), "a\r\nB\r\nc");
    assertOk(await runTool("fs_edit", { path: "crlf.txt", start_line: 3, new_string: "C" }, { cwd: w.ws }));
    assert.equal(await w.read("crlf.txt"), "a\r\nB\r\nC", "the last line keeps lacking a newline");
  });
});

Deno.test("fs_edit: bad line ranges and ambiguous modes are invalid_args", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", SOURCE);
    const edit = (args: Record<string, unknown>) =>
      runTool("fs_edit", { path: "a.txt", new_string: "x", ...args }, { cwd: w.ws });
    assertFailure(await edit({ start_line: 9 }), "invalid_args", "start_line");
    assertFailure(await edit({ start_line: 2, end_line: 9 }), "invalid_args", "end_line");
    assertFailure(await edit({ start_line: 3, end_line: 2 }), "invalid_args", "end_line");
    assertFailure(await edit({}), "invalid_args", "old_string");
    assertFailure(await edit({ old_string: "one", start_line: 1 }), "invalid_args", "start_line");
    assertFailure(
      await runTool("fs_edit", { path: "a.txt", old_string: "one" }, { cwd: w.ws }),
      "invalid_args",
      "new_string",
    );
    assert.equal(await w.read("a.txt"), SOURCE);
  });
});

Deno.test("fs_edit: the sha256 guard accepts the current file and refuses a stale one", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", SOURCE);
    const stale = await sha256("something else");
    const refused = assertFailure(
      await runTool(
        "fs_edit",
        { path: "a.txt", old_string: "one", new_string: "1", expected_sha256: stale },
        { cwd: w.ws },
      ),
      "invalid_args",
      "expected_sha256",
    );
    assert.match(String(refused.message), /changed since it was read/);
    assert.equal(await w.read("a.txt"), SOURCE);
    const current = (await sha256(SOURCE)).toUpperCase();
    assertOk(
      await runTool("fs_edit", {
        path: "a.txt",
        old_string: "one",
        new_string: "1",
        expected_sha256: current,
      }, { cwd: w.ws }),
    );
    assert.equal(await w.read("a.txt"), "1\ntwo\nthree\nfour\n");
    assertFailure(
      await runTool("fs_edit", { path: "a.txt", old_string: "1", new_string: "x", expected_sha256: "abc" }, {
        cwd: w.ws,
      }),
      "invalid_args",
      "expected_sha256",
    );
  });
});

Deno.test("fs_edit: a missing file is not_found; a binary file is refused", async () => {
  await withWorkspace(async (w) => {
    assertFailure(
      await runTool("fs_edit", { path: "nope.txt", old_string: "a", new_string: "b" }, { cwd: w.ws }),
      "not_found",
      "path",
    );
    await w.write("bin.dat", new Uint8Array([0xff, 0xfe, 0x00]));
    assertFailure(
      await runTool("fs_edit", { path: "bin.dat", start_line: 1, new_string: "b" }, { cwd: w.ws }),
      "invalid_args",
      "path",
    );
  });
});

Deno.test("fs_edit: escapes out of the workspace are refused and change nothing", async () => {
  await assertEscapesRefused("fs_edit", (path) => ({ path, old_string: "secret", new_string: "pwned" }));
});

Deno.test("fs_edit: a path ending in / is refused, and the file is not edited", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", SOURCE);
    for (const path of ["a.txt/", "a.txt/.", "sub/"]) {
      const run = await runTool("fs_edit", { path, old_string: "one", new_string: "1" }, { cwd: w.ws });
      assertFailure(run, "invalid_args", "path");
    }
    assert.equal(await w.read("a.txt"), SOURCE);
  });
});

Deno.test("fs_edit: a FIFO is refused at once, never waited on", async () => {
  await withWorkspace(async (w) => {
    await makeFifo(join(w.ws, "pipe"));
    const run = await runTool("fs_edit", { path: "pipe", start_line: 1, new_string: "x" }, {
      cwd: w.ws,
      timeoutMs: 10_000,
    });
    assertFailure(run, "invalid_args", "path");
    assert.ok((await Deno.lstat(join(w.ws, "pipe"))).isFifo);
  });
});
