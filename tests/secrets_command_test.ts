/**
 * `toolgate secrets set | list | rm` through the launcher (the least permission set of the run, as a user types
 * it): a value read from stdin is stored encrypted, listed by name and time only, and removed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SecretStore } from "../src/state/secret_store.ts";
import { REPO, runToolgate } from "./support.ts";

const VALUE = "tok-Zq9x7Kp-2026-secret-value";

Deno.test("toolgate secrets: set from stdin, list without values, rm; the keyring's secret-tool runs under the least set", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_secrets_cli_" }));
  try {
    const bin = join(root, "bin");
    await Deno.mkdir(bin);
    await Deno.writeTextFile(
      join(bin, "secret-tool"),
      `#!/bin/sh\nhere=$(dirname "$0")\ncase "$1" in\n  store) cat > "$here/keyring.txt" ;;\n  lookup) [ -s "$here/keyring.txt" ] || exit 1; cat "$here/keyring.txt" ;;\nesac\n`,
      { mode: 0o755 },
    );
    const env = {
      XDG_CONFIG_HOME: join(root, "config"),
      XDG_STATE_HOME: join(root, "state"),
      PATH: `${bin}:${Deno.env.get("PATH")}`,
    };
    const set = await runToolgate(["secrets", "set", "github_token"], root, env, VALUE + "\n");
    assert.equal(set.code, 0, set.stderr);
    assert.match(
      set.stderr,
      /stored the secret GITHUB_TOKEN in .*secrets\.json \(encrypted, its key in the desktop keyring\)/,
    );
    assert.ok(!set.stderr.includes(VALUE) && !set.stdout.includes(VALUE));
    const store = new SecretStore({ env });
    assert.deepEqual(
      await store.values(),
      { GITHUB_TOKEN: VALUE },
      "the final line break is not part of the value",
    );

    const list = await runToolgate(["secrets", "list"], root, env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^GITHUB_TOKEN\t\d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    assert.ok(!list.stdout.includes(VALUE));

    const empty = await runToolgate(["secrets", "set", "OTHER"], root, env, "");
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /no value given; OTHER was not stored/);
    const bad = await runToolgate(["secrets", "set", "no-dashes"], root, env, "x");
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /invalid secret name "NO-DASHES"/);

    const rm = await runToolgate(["secrets", "rm", "GITHUB_TOKEN"], root, env);
    assert.equal(rm.code, 0, rm.stderr);
    assert.deepEqual(store.list(), []);
    const again = await runToolgate(["secrets", "rm", "GITHUB_TOKEN"], root, env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no secret named GITHUB_TOKEN is stored/);
    // An empty store lists nothing on stdout (a script reads nothing) and says so on stderr.
    const none = await runToolgate(["secrets", "list"], root, env);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, "");
    assert.match(none.stderr, /no secret is stored/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("toolgate call: a stored secret reaches the tool under the least set; a store that cannot be read is said, and its secrets are missing", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_secrets_call_" }));
  try {
    const env = {
      XDG_CONFIG_HOME: join(root, "config"),
      XDG_STATE_HOME: join(root, "state"),
      PATH: "/usr/bin:/bin",
    };
    const store = new SecretStore({ env, keyring: null });
    await store.set("API_TOKEN", "valid-token-2026-xyz");
    const tools = join(REPO, "tests", "fixtures", "secrets", "tools.json");
    const args = ["call", "api", '{"mode":"check"}', "--tools", tools, "--sandbox", "off", "--no-audit"];
    const ok = await runToolgate(args, root, env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout).result, { user: "octocat" });
    await Deno.remove(store.keyPath);
    const broken = await runToolgate(args, root, env);
    assert.equal(broken.code, 1);
    assert.match(
      broken.stderr,
      /warning: the secret store is not used: the secret API_TOKEN .* does not decrypt/,
    );
    const envelope = JSON.parse(broken.stdout);
    assert.equal(envelope.kind, "unavailable");
    assert.equal(envelope.credential, "API_TOKEN");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
