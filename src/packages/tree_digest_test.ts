import assert from "node:assert/strict";
import { join } from "node:path";
import { treeDigest, treeStamp } from "./tree_digest.ts";

Deno.test("tree digest: bytes, the executable bit, a link's target and a new file each change it; a stamp follows any touch", () => {
  const dir = Deno.makeTempDirSync();
  Deno.mkdirSync(join(dir, "bin"));
  Deno.writeTextFileSync(join(dir, "bin", "run.js"), "1");
  Deno.symlinkSync("run.js", join(dir, "bin", "run"));
  const seen = new Set([treeDigest(dir).digest]);
  const changed = (what: string) => {
    const digest = treeDigest(dir).digest;
    assert.ok(!seen.has(digest), `${what} left the digest as it was`);
    seen.add(digest);
  };
  Deno.chmodSync(join(dir, "bin", "run.js"), 0o755);
  changed("the executable bit");
  Deno.removeSync(join(dir, "bin", "run"));
  Deno.symlinkSync("other.js", join(dir, "bin", "run"));
  changed("a link's target");
  Deno.writeTextFileSync(join(dir, "bin", ".hidden"), "");
  changed("a new file");
  const before = treeDigest(dir);
  assert.equal(treeStamp(dir), before.stamp);
  // Written again with the same bytes: the digest holds, the stamp moves.
  Deno.writeTextFileSync(join(dir, "bin", "run.js"), "1");
  assert.equal(treeDigest(dir).digest, before.digest);
  assert.notEqual(treeStamp(dir), before.stamp);
  assert.equal(before.entries, 4);
});
