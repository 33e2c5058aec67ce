/**
 * A confined manifest tool that needs a program or a file its sandbox does not show (a helper in a hidden folder,
 * a script named to python): `unavailable`, not retryable, naming the path and the profile's `read` list as the
 * fix, instead of an `execution_error` carrying the raw stderr. A file missing on the host too stays the tool's
 * own answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { confinedTest, scriptExecutor } from "../security/helpers.ts";
import { tempDir, writeFiles } from "../support.ts";

/** A workspace whose manifest has `tools` (each a `tools/bin` program of the given text, profile `none`). */
async function workspaceWith(
  dir: string,
  tools: Record<string, string>,
  read: string[] = [],
): Promise<string> {
  const files: Record<string, unknown> = {
    "tools.json": {
      tools: Object.keys(tools).map((name) => ({
        name,
        description: `Runs ${name}.`,
        command: [`./tools/bin/${name}`],
        readOnly: true,
        permissions: { read, write: [], net: false },
      })),
    },
  };
  for (const [name, text] of Object.entries(tools)) files[`tools/bin/${name}`] = text;
  await writeFiles(dir, files);
  return join(dir, "tools.json");
}

confinedTest(
  "run: a helper run from a folder the sandbox does not show is unavailable, naming the folder to read",
  async () => {
    await using hidden = await tempDir();
    await using work = await tempDir();
    const helper = join(hidden.path, ".helpers", "greet");
    await writeFiles(hidden.path, { ".helpers/greet": "#!/bin/sh\necho '{\"hi\":1}'\n" });
    await Deno.chmod(helper, 0o755);
    const manifest = await workspaceWith(work.path, {
      // A helper found at run time (not a launcher's exec, which the sandbox shows by itself).
      via_sh: `#!/bin/sh\nhelpers=${join(hidden.path, ".helpers")}\n"$helpers/greet"\n`,
      via_python: `#!/bin/sh\nexec python3 ${join(hidden.path, ".helpers", "run.py")}\n`,
      reads_secret: `#!/bin/sh\ncat ${join(hidden.path, ".ssh", "id_ed25519")}\n`,
      missing_everywhere:
        `#!/bin/sh\ncat /no/such/file/anywhere >&2; echo '{}' >/dev/null; ls /no/such/file/anywhere\n`,
    });
    await Deno.writeTextFile(join(hidden.path, ".helpers", "run.py"), "print('{}')\n");
    const executor = await scriptExecutor(work.path, {}, manifest);
    try {
      const sh = await executor.call("via_sh", "{}");
      assert.equal(sh.ok, false);
      if (sh.ok) return;
      assert.equal(sh.kind, "unavailable", JSON.stringify(sh));
      assert.equal(sh.retryable, false);
      assert.match(sh.message, new RegExp(`did not find ${helper}`));
      assert.match(
        sh.message,
        new RegExp(`add ${join(hidden.path, ".helpers")} to its profile's read list \\(now \\[\\]\\)`),
      );

      const py = await executor.call("via_python", "{}");
      assert.equal(py.ok, false);
      if (py.ok) return;
      assert.equal(py.kind, "unavailable", JSON.stringify(py));
      assert.equal(py.retryable, false);
      assert.match(py.message, /run\.py/);

      // A folder toolgate never shows (one holding secrets) is never proposed: the tool's own failure stands.
      await writeFiles(hidden.path, { ".ssh/id_ed25519": "not a key" });
      const secret = await executor.call("reads_secret", "{}");
      assert.equal(secret.ok, false);
      if (secret.ok) return;
      assert.equal(secret.kind, "execution_error", JSON.stringify(secret));
      assert.doesNotMatch(secret.message, /read list/);

      // A path the host has not either: the tool's own failure, as it said it.
      const gone = await executor.call("missing_everywhere", "{}");
      assert.equal(gone.ok, false);
      if (gone.ok) return;
      assert.equal(gone.kind, "execution_error", JSON.stringify(gone));
      assert.match(gone.message, /No such file/);
    } finally {
      await executor.close();
    }
  },
);

confinedTest("run: once the folder is in the profile's read list, the same helper runs", async () => {
  await using hidden = await tempDir();
  await using work = await tempDir();
  const helper = join(hidden.path, ".helpers", "greet");
  await writeFiles(hidden.path, { ".helpers/greet": "#!/bin/sh\necho '{\"hi\":1}'\n" });
  await Deno.chmod(helper, 0o755);
  const manifest = await workspaceWith(work.path, {
    via_sh: `#!/bin/sh\nhelpers=${join(hidden.path, ".helpers")}\n"$helpers/greet"\n`,
  }, [
    join(hidden.path, ".helpers"),
  ]);
  const executor = await scriptExecutor(work.path, {}, manifest);
  try {
    const answer = await executor.call("via_sh", "{}");
    assert.deepEqual(answer, { ok: true, result: { hi: 1 }, tool: "via_sh" });
  } finally {
    await executor.close();
  }
});
