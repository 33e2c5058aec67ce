/** fs_read_lines: 1-based inclusive ranges, the end of the file, caps, and workspace confinement. */
import assert from "node:assert/strict";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

const FIVE = "one\ntwo\nthree\nfour\nfive\n";

Deno.test("fs_read_lines: a 1-based inclusive range", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", FIVE);
    const result = assertOk(
      await runTool("fs_read_lines", { path: "a.txt", start_line: 2, end_line: 4 }, { cwd: w.ws }),
    );
    assert.deepEqual(result, {
      kind: "lines",
      path: "a.txt",
      start_line: 2,
      end_line: 4,
      line_count: 3,
      content: "two\nthree\nfour",
      eof: false,
      truncated: false,
    });
  });
});

Deno.test("fs_read_lines: defaults read the whole file; a single line; CRLF endings are dropped", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", FIVE);
    const all = assertOk(await runTool("fs_read_lines", { path: "a.txt" }, { cwd: w.ws }));
    assert.equal(all.content, "one\ntwo\nthree\nfour\nfive");
    assert.equal(all.line_count, 5);
    assert.equal(all.eof, true);
    const one = assertOk(
      await runTool("fs_read_lines", { path: "a.txt", start_line: 5, end_line: 5 }, { cwd: w.ws }),
    );
    assert.equal(one.content, "five");
    await w.write("crlf.txt", "a\r\nb\r\nc");
    const crlf = assertOk(await runTool("fs_read_lines", { path: "crlf.txt", start_line: 2 }, { cwd: w.ws }));
    assert.equal(crlf.content, "b\nc");
    assert.equal(crlf.end_line, 3);
  });
});

Deno.test("fs_read_lines: a range past the end is an empty result, never a crash", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", FIVE);
    const past = assertOk(
      await runTool("fs_read_lines", { path: "a.txt", start_line: 50, end_line: 60 }, { cwd: w.ws }),
    );
    assert.equal(past.content, "");
    assert.equal(past.line_count, 0);
    assert.equal(past.end_line, 49, "an empty range ends before it starts");
    assert.equal(past.eof, true);
    assert.equal(past.truncated, false);
    const overlapping = assertOk(
      await runTool("fs_read_lines", { path: "a.txt", start_line: 4, end_line: 99 }, { cwd: w.ws }),
    );
    assert.equal(overlapping.content, "four\nfive");
    assert.equal(overlapping.end_line, 5);
    await w.write("empty.txt", "");
    const empty = assertOk(await runTool("fs_read_lines", { path: "empty.txt" }, { cwd: w.ws }));
    assert.equal(empty.line_count, 0);
  });
});

Deno.test("fs_read_lines: more than 2000 lines per call are cut, and the result says so", async () => {
  await withWorkspace(async (w) => {
    await w.write("long.txt", Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`).join("\n"));
    const result = assertOk(await runTool("fs_read_lines", { path: "long.txt" }, { cwd: w.ws }));
    assert.equal(result.line_count, 2000);
    assert.equal(result.end_line, 2000);
    assert.equal(result.truncated, true);
    const rest = assertOk(
      await runTool("fs_read_lines", { path: "long.txt", start_line: 2001 }, { cwd: w.ws }),
    );
    assert.equal(rest.line_count, 500);
    assert.equal(rest.content.split("\n").at(-1), "line 2500");
    assert.equal(rest.truncated, false);
  });
});

Deno.test("fs_read_lines: bad ranges and missing files", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", FIVE);
    assertFailure(
      await runTool("fs_read_lines", { path: "a.txt", start_line: 0 }, { cwd: w.ws }),
      "invalid_args",
      "start_line",
    );
    assertFailure(
      await runTool("fs_read_lines", { path: "a.txt", start_line: 3, end_line: 2 }, { cwd: w.ws }),
      "invalid_args",
      "end_line",
    );
    assertFailure(
      await runTool("fs_read_lines", { path: "missing.txt" }, { cwd: w.ws }),
      "not_found",
      "path",
    );
    assertFailure(await runTool("fs_read_lines", { path: "sub" }, { cwd: w.ws }), "invalid_args", "path");
  });
});

Deno.test("fs_read_lines: escapes out of the workspace are refused", async () => {
  await assertEscapesRefused("fs_read_lines", (path) => ({ path }));
});
