/** fs_read_file: byte ranges, text or base64, the size cap, and workspace confinement. */
import assert from "node:assert/strict";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

Deno.test("fs_read_file: reads a whole text file with its metadata", async () => {
  await withWorkspace(async (w) => {
    await w.write("notes/a.txt", "héllo\nworld\n");
    const result = assertOk(await runTool("fs_read_file", { path: "notes/a.txt" }, { cwd: w.ws }));
    assert.deepEqual(result, {
      kind: "file",
      path: "notes/a.txt",
      encoding: "text",
      content: "héllo\nworld\n",
      offset: 0,
      bytes: 13,
      size: 13,
      truncated: false,
    });
  });
});

Deno.test("fs_read_file: a byte range, as text and as base64; the path comes back normalized", async () => {
  await withWorkspace(async (w) => {
    await w.write("bin.dat", new Uint8Array([0, 1, 2, 255, 254, 65, 66]));
    const text = assertOk(
      await runTool("fs_read_file", { path: "./bin.dat", offset: 5, length: 2 }, { cwd: w.ws }),
    );
    assert.equal(text.path, "bin.dat");
    assert.equal(text.content, "AB");
    assert.equal(text.truncated, false);
    const b64 = assertOk(
      await runTool("fs_read_file", { path: "bin.dat", offset: 1, length: 4, encoding: "base64" }, {
        cwd: w.ws,
      }),
    );
    assert.equal(b64.content, btoa(String.fromCharCode(1, 2, 255, 254)));
    assert.equal(b64.bytes, 4);
    assert.equal(b64.size, 7);
    assert.equal(b64.truncated, true, "bytes remain after the range");
  });
});

Deno.test("fs_read_file: an offset past the end is an empty read, not an error", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "abc");
    const result = assertOk(await runTool("fs_read_file", { path: "a.txt", offset: 100 }, { cwd: w.ws }));
    assert.equal(result.content, "");
    assert.equal(result.bytes, 0);
    assert.equal(result.offset, 3);
    assert.equal(result.truncated, false);
  });
});

Deno.test("fs_read_file: the default length and the cap bound what one call returns", async () => {
  await withWorkspace(async (w) => {
    await w.write("big.txt", "x".repeat(300_000));
    const result = assertOk(await runTool("fs_read_file", { path: "big.txt" }, { cwd: w.ws }));
    assert.equal(result.bytes, 262_144);
    assert.equal(result.truncated, true);
    assertFailure(
      await runTool("fs_read_file", { path: "big.txt", length: 2_000_000 }, { cwd: w.ws }),
      "invalid_args",
      "length",
    );
    assertFailure(
      await runTool("fs_read_file", { path: "big.txt", offset: -1 }, { cwd: w.ws }),
      "invalid_args",
      "offset",
    );
  });
});

Deno.test("fs_read_file: string-encoded numbers are accepted, as the preflight would coerce them", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "abcdef");
    const result = assertOk(
      await runTool("fs_read_file", { path: "a.txt", offset: "2", length: "2" }, { cwd: w.ws }),
    );
    assert.equal(result.content, "cd");
  });
});

Deno.test("fs_read_file: a missing file is not_found naming path; a directory is invalid_args", async () => {
  await withWorkspace(async (w) => {
    const missing = assertFailure(
      await runTool("fs_read_file", { path: "nope.txt" }, { cwd: w.ws }),
      "not_found",
      "path",
    );
    assert.equal(missing.retryable, false);
    assertFailure(
      await runTool("fs_read_file", { path: "sub/nope/deeper.txt" }, { cwd: w.ws }),
      "not_found",
      "path",
    );
    assertFailure(await runTool("fs_read_file", { path: "sub" }, { cwd: w.ws }), "invalid_args", "path");
  });
});

Deno.test("fs_read_file: a symlink that stays inside the workspace is followed", async () => {
  await withWorkspace(async (w) => {
    await w.write("sub/inside.txt", "inside");
    const result = assertOk(await runTool("fs_read_file", { path: "in_link/inside.txt" }, { cwd: w.ws }));
    assert.equal(result.content, "inside");
  });
});

Deno.test("fs_read_file: bad arguments are invalid_args naming the field", async () => {
  await withWorkspace(async (w) => {
    assertFailure(await runTool("fs_read_file", {}, { cwd: w.ws }), "invalid_args", "path");
    assertFailure(await runTool("fs_read_file", { path: 3 }, { cwd: w.ws }), "invalid_args", "path");
    assertFailure(
      await runTool("fs_read_file", { path: "a", mode: "x" }, { cwd: w.ws }),
      "invalid_args",
      "mode",
    );
    assertFailure(
      await runTool("fs_read_file", { path: "a", encoding: "utf16" }, { cwd: w.ws }),
      "invalid_args",
      "encoding",
    );
    assertFailure(
      await runTool("fs_read_file", null, { cwd: w.ws, rawStdin: "not json" }),
      "invalid_args",
      "arguments",
    );
    assertFailure(
      await runTool("fs_read_file", null, { cwd: w.ws, rawStdin: "[1]" }),
      "invalid_args",
      "arguments",
    );
  });
});

Deno.test("fs_read_file: escapes out of the workspace are refused", async () => {
  await assertEscapesRefused("fs_read_file", (path) => ({ path }));
});
