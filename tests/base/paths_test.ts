// src/base/paths.ts stands in for node:path's POSIX functions on the start-up path: it must give their very results.
import assert from "node:assert/strict";
import * as node from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as ours from "../../src/base/paths.ts";

const PARTS = ["", ".", "..", "...", "a", "bc", ".d", "e.", "/", "//", "a/", "/a", "..a", "a..", " ", "%20"];

/** Paths built from every pair and some triples of the parts above, with slashes between and around them. */
function corpus(): string[] {
  const paths = new Set<string>(PARTS);
  for (const a of PARTS) {
    for (const b of PARTS) {
      paths.add(a + b);
      paths.add(`${a}/${b}`);
      for (const c of ["", "..", "x", "/", "./"]) paths.add(`${a}/${b}/${c}`);
    }
  }
  return [...paths];
}

Deno.test("paths: normalize, dirname, basename, isAbsolute match node:path on generated paths", () => {
  const paths = corpus();
  assert.ok(paths.length > 1000, `${paths.length} paths`);
  for (const path of paths) {
    assert.equal(ours.normalize(path), node.posix.normalize(path), `normalize(${JSON.stringify(path)})`);
    assert.equal(ours.dirname(path), node.posix.dirname(path), `dirname(${JSON.stringify(path)})`);
    assert.equal(ours.basename(path), node.posix.basename(path), `basename(${JSON.stringify(path)})`);
    assert.equal(ours.isAbsolute(path), node.posix.isAbsolute(path), `isAbsolute(${JSON.stringify(path)})`);
    const windows = path.replaceAll("/", "\\");
    for (const p of [windows, `C:${windows}`, `c:/${path}`, `1:\\${path}`]) {
      assert.equal(
        ours.isWindowsAbsolute(p),
        node.win32.isAbsolute(p),
        `isWindowsAbsolute(${JSON.stringify(p)})`,
      );
    }
  }
});

Deno.test("paths: join, resolve, relative match node:path on generated pairs", () => {
  const paths = corpus().filter((_, i) => i % 3 === 0);
  for (const a of paths) {
    for (const b of paths.slice(0, 120)) {
      assert.equal(
        ours.join(a, b),
        node.posix.join(a, b),
        `join(${JSON.stringify(a)}, ${JSON.stringify(b)})`,
      );
      assert.equal(ours.resolve(a, b), node.posix.resolve(a, b), `resolve(${JSON.stringify([a, b])})`);
      assert.equal(ours.relative(a, b), node.posix.relative(a, b), `relative(${JSON.stringify([a, b])})`);
    }
  }
  assert.equal(ours.join(), node.posix.join());
  assert.equal(ours.resolve(), node.posix.resolve());
});

Deno.test("paths: fromFileUrl decodes as node:url does", () => {
  for (const path of ["/srv/my tools/x.ts", "/a/%25/b", "/ü/ß", "/a#b/c?d"]) {
    const url = pathToFileURL(path);
    assert.equal(ours.fromFileUrl(url), fileURLToPath(url));
    assert.equal(ours.fromFileUrl(url.href), fileURLToPath(url.href));
  }
  assert.throws(() => ours.fromFileUrl("https://example.com/x"), TypeError);
});
