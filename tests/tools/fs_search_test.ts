/** fs_search: literal and regex search, globs, the cap, skipped files, and workspace confinement. */
import assert from "node:assert/strict";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

Deno.test("fs_search: a literal search reports path, line, column and text", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "alpha\nTODO: one\nbeta (x.y)\n");
    await w.write("src/b.ts", "// TODO two\n");
    const result = assertOk(await runTool("fs_search", { pattern: "TODO" }, { cwd: w.ws }));
    assert.deepEqual(result.matches, [
      { path: "a.txt", line: 2, column: 1, text: "TODO: one" },
      { path: "src/b.ts", line: 1, column: 4, text: "// TODO two" },
    ]);
    assert.equal(result.match_count, 2);
    assert.equal(result.truncated, false);
    assert.equal(result.files_searched, 2);
    // Regex metacharacters in a literal pattern are just characters.
    const literal = assertOk(await runTool("fs_search", { pattern: "(x.y)" }, { cwd: w.ws }));
    assert.equal(literal.match_count, 1);
  });
});

Deno.test("fs_search: regex, case-insensitive, a glob and a single-file path", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "fn main() {}\nFN other\n");
    await w.write("src/b.rs", "fn helper() {}\n");
    const regex = assertOk(
      await runTool("fs_search", { pattern: "^fn\\s+\\w+\\(", regex: true }, { cwd: w.ws }),
    );
    assert.deepEqual(regex.matches.map((m: { path: string; line: number }) => `${m.path}:${m.line}`), [
      "a.txt:1",
      "src/b.rs:1",
    ]);
    const loose = assertOk(
      await runTool("fs_search", { pattern: "fn", case_sensitive: false, path: "a.txt" }, { cwd: w.ws }),
    );
    assert.equal(loose.match_count, 2);
    const globbed = assertOk(await runTool("fs_search", { pattern: "fn", glob: "*.rs" }, { cwd: w.ws }));
    assert.deepEqual(globbed.matches.map((m: { path: string }) => m.path), ["src/b.rs"]);
    assertFailure(
      await runTool("fs_search", { pattern: "(", regex: true }, { cwd: w.ws }),
      "invalid_args",
      "pattern",
    );
    assertFailure(await runTool("fs_search", { pattern: "" }, { cwd: w.ws }), "invalid_args", "pattern");
  });
});

Deno.test("fs_search: the result cap truncates", async () => {
  await withWorkspace(async (w) => {
    await w.write("many.txt", "hit\n".repeat(50));
    const result = assertOk(await runTool("fs_search", { pattern: "hit", max_results: 10 }, { cwd: w.ws }));
    assert.equal(result.match_count, 10);
    assert.equal(result.truncated, true);
  });
});

Deno.test("fs_search: large and binary files are skipped and counted, not fatal", async () => {
  await withWorkspace(async (w) => {
    await w.write("small.txt", "needle\n");
    await w.write("large.txt", "needle\n" + "x".repeat(5000));
    await w.write("binary.bin", new Uint8Array([110, 101, 101, 100, 108, 101, 0, 1, 2]));
    const result = assertOk(
      await runTool("fs_search", { pattern: "needle", max_file_bytes: 1000 }, { cwd: w.ws }),
    );
    assert.deepEqual(result.matches.map((m: { path: string }) => m.path), ["small.txt"]);
    assert.equal(result.skipped_large, 1);
    assert.equal(result.skipped_binary, 1);
    assert.equal(result.files_searched, 1);
  });
});

Deno.test("fs_search: symlinks are not followed, so nothing outside is searched", async () => {
  await withWorkspace(async (w) => {
    await w.write("sub/inside.txt", "secret inside\n");
    const result = assertOk(await runTool("fs_search", { pattern: "secret" }, { cwd: w.ws }));
    assert.deepEqual(result.matches.map((m: { path: string }) => m.path), ["sub/inside.txt"]);
  });
});

Deno.test("fs_search: a missing path is not_found", async () => {
  await withWorkspace(async (w) => {
    assertFailure(
      await runTool("fs_search", { pattern: "x", path: "nowhere" }, { cwd: w.ws }),
      "not_found",
      "path",
    );
  });
});

Deno.test("fs_search: escapes out of the workspace are refused", async () => {
  await assertEscapesRefused("fs_search", (path) => ({ pattern: "secret", path }));
});
