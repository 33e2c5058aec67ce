/**
 * The secret store with real files and a real `secret-tool` stand-in (a script on PATH): modes, encryption at rest
 * (no value in the file's bytes), the key in the keyring or in another folder than the store, and refusals.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SecretStore } from "../../src/state/secret_store.ts";
import { StateDirError } from "../../src/state/state.ts";

const VALUE = "ghp_S3cretValue-0123456789abcdef";

/** Separate config and state folders (as XDG places them), removed at the end. */
async function homes(): Promise<
  AsyncDisposable & { config: string; state: string; bin: string; env: Record<string, string> }
> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_secrets_" }));
  const config = join(root, "config");
  const state = join(root, "state");
  const bin = join(root, "bin");
  await Deno.mkdir(bin);
  return {
    config,
    state,
    bin,
    env: { XDG_CONFIG_HOME: config, XDG_STATE_HOME: state, HOME: root, PATH: `${bin}:/usr/bin:/bin` },
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

/**
 * A `secret-tool` stand-in: `store` keeps stdin in `keyring.txt` beside it (with the attributes it was given),
 * `lookup` prints it (exit 1, silent, when there is none), as the real one does.
 */
async function fakeSecretTool(bin: string): Promise<string> {
  const path = join(bin, "secret-tool");
  await Deno.writeTextFile(
    path,
    `#!/bin/sh
here=$(dirname "$0")
case "$1" in
  store) cat > "$here/keyring.txt"; shift; echo "$*" > "$here/keyring.args" ;;
  lookup) [ -s "$here/keyring.txt" ] || exit 1; cat "$here/keyring.txt" ;;
  *) exit 2 ;;
esac
`,
    { mode: 0o755 },
  );
  return path;
}

function mode(path: string): number {
  return (Deno.statSync(path).mode ?? 0) & 0o777;
}

Deno.test("secret store: the file is 0600 in a 0700 folder, and the value is not in its bytes", async () => {
  await using dirs = await homes();
  const store = new SecretStore({ env: dirs.env, keyring: null });
  await store.set("GITHUB_TOKEN", VALUE, new Date("2026-11-23T10:00:00Z"));
  assert.equal(store.path, join(dirs.config, "toolgate", "secrets.json"));
  assert.equal(mode(store.path), 0o600);
  assert.equal(mode(join(dirs.config, "toolgate")), 0o700);
  const bytes = await Deno.readFile(store.path);
  const text = new TextDecoder().decode(bytes);
  assert.ok(!text.includes(VALUE), "the value is in the file in clear");
  assert.ok(!text.includes(btoa(VALUE)), "the value is in the file in base64");
  assert.ok(!text.includes(VALUE.slice(4, 16)), "a fragment of the value is in the file");
  assert.deepEqual(store.list(), [{ name: "GITHUB_TOKEN", setAt: "2026-11-23T10:00:00.000Z" }]);
  // Read back by another process's store (nothing kept in memory).
  assert.deepEqual(await new SecretStore({ env: dirs.env, keyring: null }).values(), { GITHUB_TOKEN: VALUE });
});

Deno.test("secret store: without a keyring the key is a 0600 file in the state folder, not beside the store", async () => {
  await using dirs = await homes();
  const store = new SecretStore({ env: dirs.env, keyring: null });
  await store.set("A_KEY", "value-a-123");
  assert.equal(store.keySource(), "file");
  assert.equal(store.keyPath, join(dirs.state, "toolgate", "secrets.key"));
  assert.equal(mode(store.keyPath), 0o600);
  assert.equal((await Deno.stat(store.keyPath)).size, 32);
  assert.deepEqual([...Deno.readDirSync(join(dirs.config, "toolgate"))].map((e) => e.name), ["secrets.json"]);
  // Another key: the values no longer decrypt, and the error says what to do (never the value).
  await Deno.remove(store.keyPath);
  const error = await new SecretStore({ env: dirs.env, keyring: null }).values().catch((e) => e);
  assert.ok(error instanceof StateDirError);
  assert.match(error.message, /A_KEY .* does not decrypt .*toolgate secrets set A_KEY/);
});

Deno.test("secret store: with secret-tool the key goes to the desktop keyring and no key file is made", async () => {
  await using dirs = await homes();
  await fakeSecretTool(dirs.bin);
  // Found on PATH, as in a desktop session.
  const store = new SecretStore({ env: dirs.env });
  await store.set("GITHUB_TOKEN", VALUE);
  assert.equal(store.keySource(), "keyring");
  const stored = (await Deno.readTextFile(join(dirs.bin, "keyring.txt"))).trim();
  assert.equal(atob(stored).length, 32, "a 32-byte key, base64, went to the keyring on stdin");
  assert.equal(
    (await Deno.readTextFile(join(dirs.bin, "keyring.args"))).trim(),
    "--label=toolgate secret store key service toolgate key secret-store",
  );
  await assert.rejects(Deno.stat(store.keyPath), Deno.errors.NotFound);
  assert.ok(!(await Deno.readTextFile(store.path)).includes(stored), "the key is not in the store file");
  assert.deepEqual(await new SecretStore({ env: dirs.env }).values(), { GITHUB_TOKEN: VALUE });
  // The keyring lost the key: refused, saying where the key was, rather than a new key quietly made.
  await Deno.remove(join(dirs.bin, "keyring.txt"));
  const error = await new SecretStore({ env: dirs.env }).values().catch((e) => e);
  assert.ok(error instanceof StateDirError);
  assert.match(error.message, /desktop keyring, which has none now/);
  await assert.rejects(Deno.stat(store.keyPath), Deno.errors.NotFound);
});

Deno.test("secret store: a keyring that cannot be reached (no D-Bus session) falls back to the key file", async () => {
  await using dirs = await homes();
  await Deno.writeTextFile(
    join(dirs.bin, "secret-tool"),
    "#!/bin/sh\necho 'Cannot autolaunch D-Bus without X11 $DISPLAY' >&2\nexit 1\n",
    { mode: 0o755 },
  );
  const store = new SecretStore({ env: dirs.env });
  await store.set("A_KEY", "value-a-123");
  assert.equal(store.keySource(), "file");
  assert.equal(mode(store.keyPath), 0o600);
  assert.deepEqual(await store.values(), { A_KEY: "value-a-123" });
});

Deno.test("secret store: a value moved under another name does not decrypt (each value is bound to its name)", async () => {
  await using dirs = await homes();
  const store = new SecretStore({ env: dirs.env, keyring: null });
  await store.set("LOW_VALUE", "harmless-value");
  await store.set("HIGH_VALUE", VALUE);
  const file = JSON.parse(await Deno.readTextFile(store.path));
  file.secrets.LOW_VALUE = file.secrets.HIGH_VALUE;
  await Deno.writeTextFile(store.path, JSON.stringify(file));
  await assert.rejects(
    () => new SecretStore({ env: dirs.env, keyring: null }).values(),
    /LOW_VALUE .* does not decrypt/,
  );
});

Deno.test("secret store: list needs no key, rm removes one, and names are checked", async () => {
  await using dirs = await homes();
  const store = new SecretStore({ env: dirs.env, keyring: null });
  assert.deepEqual(store.list(), []);
  assert.deepEqual(await store.values(), {});
  await store.set("B_KEY", "value-b-123");
  await store.set("A_KEY", "value-a-123");
  await Deno.remove(store.keyPath);
  assert.deepEqual(store.list().map((s) => s.name), ["A_KEY", "B_KEY"]);
  assert.equal(store.remove("B_KEY"), true);
  assert.equal(store.remove("B_KEY"), false);
  assert.deepEqual(store.list().map((s) => s.name), ["A_KEY"]);
  await assert.rejects(() => store.set("not-a-name", "x"), SyntaxError);
  assert.equal(mode(store.path), 0o600, "a rewrite keeps the mode");
});

Deno.test("secret store: a store file that is a link, or open to others, is refused, not followed", async () => {
  await using dirs = await homes();
  const store = new SecretStore({ env: dirs.env, keyring: null });
  await store.set("A_KEY", "value-a-123");
  const elsewhere = join(dirs.state, "planted.json");
  await Deno.mkdir(dirs.state, { recursive: true });
  await Deno.rename(store.path, elsewhere);
  await Deno.symlink(elsewhere, store.path);
  assert.throws(() => store.list(), /symbolic link/);
  await Deno.remove(store.path);
  await Deno.rename(elsewhere, store.path);
  await Deno.chmod(store.path, 0o644);
  assert.throws(() => store.list(), /open to others/);
  await Deno.chmod(store.path, 0o600);
  await Deno.chmod(join(dirs.config, "toolgate"), 0o755);
  assert.throws(() => store.list(), /wants 0700/);
});
