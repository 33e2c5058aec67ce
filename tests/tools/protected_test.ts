/**
 * TOOLGATE_PROTECTED: the file tools refuse to write, create, replace or delete anything at or under a `readOnly` or
 * `hidden` path, and to read or list anything at or under a `hidden` one (kind `rejected`, not retryable, `field`
 * the path argument), comparing real paths so that no symlink leads around them; a malformed value refuses all.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertFailure, assertOk, runTool, type ToolRun, withWorkspace, type Workspace } from "./helpers.ts";

const VARIABLE = "TOOLGATE_PROTECTED";

/**
 * A workspace holding a control plane: `tools.json`, `tools/bin/t` and `app/deno.json` read-only, `deno.lock`
 * read-only though it does not exist yet, `.state/` hidden (holding `key`), plus `to_manifest` and `to_state`,
 * symlinks onto them. The variable names the workspace through `alias`, a symlink to it, so matching needs real
 * paths.
 */
async function withControlPlane(
  body: (w: Workspace, run: (tool: string, args: unknown) => Promise<ToolRun>) => Promise<void>,
): Promise<void> {
  await withWorkspace(async (w) => {
    await w.write("tools.json", '{"tools": []}\n');
    await w.write("tools/bin/t", "#!/bin/sh\n");
    await w.write("app/deno.json", "{}\n");
    await w.write("app/notes.txt", "notes\n");
    await w.write(".state/key", "state-secret\n");
    await w.write("free.txt", "free\n");
    await Deno.symlink("tools.json", join(w.ws, "to_manifest"));
    await Deno.symlink(".state", join(w.ws, "to_state"));
    const alias = join(w.base, "alias");
    await Deno.symlink(w.ws, alias);
    const value = JSON.stringify({
      readOnly: ["tools.json", "tools", "app/deno.json", "deno.lock"].map((p) => join(alias, p)),
      hidden: [join(alias, ".state")],
    });
    await body(w, (tool, args) => runTool(tool, args, { cwd: w.ws, env: { [VARIABLE]: value } }));
  });
}

function assertRejected(run: ToolRun, what: string): void {
  const envelope = assertFailure(run, "rejected", "path");
  assert.equal(envelope.retryable, false, what);
}

Deno.test("protected: no write, creation, edit, mkdir or removal at or under a read-only path", async () => {
  await withControlPlane(async (w, run) => {
    const attempts: Array<[string, Record<string, unknown>]> = [
      ["fs_write_file", { path: "tools.json", content: "{}" }],
      ["fs_write_file", { path: "to_manifest", content: "{}" }],
      ["fs_write_file", { path: "tools/bin/t", content: "pwned" }],
      ["fs_write_file", { path: "tools/bin/new", content: "pwned" }],
      ["fs_write_file", { path: "tools/new/x", content: "pwned", create_parents: true }],
      ["fs_write_file", { path: "deno.lock", content: "pwned" }],
      ["fs_edit", { path: "tools.json", old_string: "tools", new_string: "pwned" }],
      ["fs_edit", { path: "to_manifest", old_string: "tools", new_string: "pwned" }],
      ["fs_mkdir", { path: "tools/sub" }],
      ["fs_mkdir", { path: "deno.lock" }],
      ["fs_mkdir", { path: "tools/a/b", parents: true }],
      ["fs_remove", { path: "tools.json" }],
      ["fs_remove", { path: "tools/bin/t" }],
      ["fs_remove", { path: "tools", recursive: true }],
      ["fs_remove", { path: "app", recursive: true }],
    ];
    for (const [tool, args] of attempts) {
      assertRejected(await run(tool, args), `${tool} ${JSON.stringify(args)}`);
    }
    assert.equal(await w.read("tools.json"), '{"tools": []}\n');
    assert.equal(await w.read("tools/bin/t"), "#!/bin/sh\n");
    assert.equal(await w.read("app/notes.txt"), "notes\n");
    for (const path of ["tools/bin/new", "tools/new", "deno.lock", "tools/sub", "tools/a"]) {
      await assert.rejects(Deno.lstat(join(w.ws, path)), Deno.errors.NotFound, path);
    }
  });
});

Deno.test("protected: read-only paths stay readable, and the rest of the workspace stays writable", async () => {
  await withControlPlane(async (w, run) => {
    assert.equal(assertOk(await run("fs_read_file", { path: "tools.json" })).content, '{"tools": []}\n');
    assert.equal(assertOk(await run("fs_stat", { path: "tools/bin/t" })).type, "file");
    assertOk(await run("fs_write_file", { path: "free.txt", content: "changed" }));
    assertOk(await run("fs_write_file", { path: "app/other.txt", content: "new" }));
    assertOk(await run("fs_remove", { path: "app/notes.txt" }));
    // The link is not the control plane: removing it leaves its target.
    assertOk(await run("fs_remove", { path: "to_manifest" }));
    assert.equal(await w.read("tools.json"), '{"tools": []}\n');
  });
});

Deno.test("protected: a hidden path is neither read, listed, searched, described nor changed", async () => {
  await withControlPlane(async (w, run) => {
    for (
      const [tool, args] of [
        ["fs_read_file", { path: ".state/key" }],
        ["fs_read_file", { path: "to_state/key" }],
        ["fs_read_lines", { path: ".state/key" }],
        ["fs_list_dir", { path: ".state" }],
        ["fs_list_dir", { path: "to_state" }],
        ["fs_search", { pattern: "state", path: ".state" }],
        ["fs_stat", { path: ".state/key" }],
        ["fs_stat", { path: "to_state" }],
        ["fs_write_file", { path: ".state/key", content: "x" }],
        ["fs_remove", { path: ".state", recursive: true }],
      ] as const
    ) {
      assertRejected(await run(tool, args), `${tool} ${JSON.stringify(args)}`);
    }
    const listing = assertOk(await run("fs_list_dir", { recursive: true, max_depth: 5 }));
    const paths = listing.entries.map((e: { path: string }) => e.path);
    assert.ok(!paths.some((p: string) => p.startsWith(".state")), paths.join(", "));
    const search = assertOk(await run("fs_search", { pattern: "state-secret" }));
    assert.deepEqual(search.matches, []);
    assert.equal(await w.read(".state/key"), "state-secret\n");
  });
});

Deno.test("protected: a malformed variable refuses every file tool; an empty one protects nothing", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "a\n");
    for (const value of ["{not json", "[]", '{"readOnly": "tools.json"}', '{"hidden": ["relative/path"]}']) {
      const read = await runTool("fs_read_file", { path: "a.txt" }, {
        cwd: w.ws,
        env: { [VARIABLE]: value },
      });
      const envelope = assertFailure(read, "execution_error");
      assert.match(String(envelope.message), /TOOLGATE_PROTECTED is malformed/, value);
      const write = await runTool("fs_write_file", { path: "a.txt", content: "b" }, {
        cwd: w.ws,
        env: { [VARIABLE]: value },
      });
      assertFailure(write, "execution_error");
    }
    assert.equal(await w.read("a.txt"), "a\n");
    assertOk(
      await runTool("fs_write_file", { path: "a.txt", content: "b" }, { cwd: w.ws, env: { [VARIABLE]: "" } }),
    );
  });
});
