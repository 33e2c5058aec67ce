import assert from "node:assert/strict";
import { join } from "node:path";
import { readCache, writeCache } from "../../src/state/state_cache.ts";
import { scratch } from "../executor_helpers.ts";

Deno.test("state cache: a value is read back for its key only, and lands with mode 0600", async () => {
  await using state = await scratch();
  writeCache(state.path, "probe", "host-1", { ok: true });
  assert.deepEqual(readCache(state.path, "probe", "host-1"), { ok: true });
  assert.equal(readCache(state.path, "probe", "host-2"), undefined);
  assert.equal((await Deno.stat(join(state.path, "cache", "probe.json"))).mode! & 0o777, 0o600);
  assert.equal((await Deno.stat(join(state.path, "cache"))).mode! & 0o777, 0o700);
  // A torn or foreign file is no value.
  await Deno.writeTextFile(join(state.path, "cache", "probe.json"), "{not json");
  assert.equal(readCache(state.path, "probe", "host-1"), undefined);
});

Deno.test("state cache: never creates the state folder, never writes through a link", async () => {
  await using root = await scratch();
  await using outside = await scratch();
  // A state folder that does not exist yet stays absent.
  writeCache(join(root.path, "missing"), "probe", "k", 1);
  assert.deepEqual([...Deno.readDirSync(root.path)], []);
  // A state folder that is a link: its target is untouched.
  await Deno.symlink(outside.path, join(root.path, "linked"));
  writeCache(join(root.path, "linked"), "probe", "k", 1);
  assert.deepEqual([...Deno.readDirSync(outside.path)], []);
  // A cache folder that is a link: its target is untouched.
  await Deno.mkdir(join(root.path, "real"));
  await Deno.symlink(outside.path, join(root.path, "real", "cache"));
  writeCache(join(root.path, "real"), "probe", "k", 1);
  assert.deepEqual([...Deno.readDirSync(outside.path)], []);
});
