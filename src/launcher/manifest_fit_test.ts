import assert from "node:assert/strict";
import { join } from "node:path";
import { loadManifest } from "../manifest/manifest.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { beyondGrants, declaredVariables, type FitContext } from "./manifest_fit.ts";

/** A manifest of `tools` in a folder of its own, whose programs `tools/bin/a` and `tools/bin/b` exist. */
async function manifestOf(dir: string, tools: unknown[]): Promise<Manifest> {
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  for (const name of ["a", "b"]) {
    await Deno.writeTextFile(join(dir, "tools", "bin", name), "#!/bin/sh\necho '{}'\n");
    await Deno.chmod(join(dir, "tools", "bin", name), 0o755);
  }
  const path = join(dir, "tools.json");
  await Deno.writeTextFile(path, JSON.stringify({ tools }));
  const loaded = await loadManifest(path);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return loaded.manifest;
}

/** A tool of program `program` (`a` or `b`), read-only, with `extra` fields. */
const tool = (name: string, program: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `Does ${name}.`,
  command: [`./tools/bin/${program}`],
  readOnly: true,
  permissions: "none",
  ...extra,
});

/** A grant check of the run grants `programs` only, and any read and host. */
const runs = (programs: readonly string[]) => (descriptor: Deno.PermissionDescriptor) =>
  descriptor.name !== "run" || programs.includes(String(descriptor.command));

Deno.test("manifest fit: the variables, secrets and credentials the start declared are what a new manifest may use", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const start = await manifestOf(dir, [
      tool("a", "a", { envPassthrough: ["tz"], secrets: ["API_KEY"] }),
    ]);
    assert.deepEqual(declaredVariables(start).sort(), ["API_KEY", "TZ"]);
    const context: FitContext = { start, env: {}, workspace: dir, stateDirs: [], granted: () => true };
    const same = await manifestOf(dir, [tool("a2", "a", { secrets: ["API_KEY"], envPassthrough: ["TZ"] })]);
    assert.deepEqual(beyondGrants(same, context), []);
    const more = await manifestOf(dir, [
      tool("a", "a", {
        envPassthrough: ["TZ", "LANG"],
        secrets: ["OTHER_KEY"],
        permissions: { net: ["api.example.com"] },
        credentials: [{
          secret: "BOUND_KEY",
          env: "BOUND",
          hosts: ["api.example.com"],
          header: "Authorization",
        }],
      }),
    ]);
    assert.deepEqual(beyondGrants(more, context), [
      "the variable LANG, read only at start",
      "the variable OTHER_KEY, read only at start",
      "the variable BOUND_KEY, read only at start",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("manifest fit: a program this process may not start, or a host it may not reach, is beyond it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const start = await manifestOf(dir, [tool("a", "a")]);
    const programA = join(await Deno.realPath(dir), "tools", "bin", "a");
    const next = await manifestOf(dir, [tool("a", "a"), tool("b", "b")]);
    const programB = next.byName.get("b")!.program;
    const context: FitContext = { start, env: {}, workspace: dir, stateDirs: [], granted: runs([programA]) };
    assert.deepEqual(beyondGrants(next, { ...context, granted: runs([programA, programB]) }), []);
    assert.deepEqual(beyondGrants(next, { ...context, granted: runs([next.byName.get("a")!.program]) }), [
      `running ${programB}`,
    ]);
    const hosts = await manifestOf(dir, [tool("a", "a", { permissions: { net: ["api.example.com:443"] } })]);
    const noNet = (descriptor: Deno.PermissionDescriptor) => descriptor.name !== "net";
    assert.deepEqual(beyondGrants(hosts, { ...context, granted: noNet }), ["the host api.example.com:443"]);
    // The code a command line names, which the trust check looks at: read it must.
    const noRead = (descriptor: Deno.PermissionDescriptor) =>
      descriptor.name !== "read" || descriptor.path !== "/opt/elsewhere/lib.py";
    assert.deepEqual(beyondGrants(start, { ...context, granted: noRead, reads: ["/opt/elsewhere/lib.py"] }), [
      "reading /opt/elsewhere/lib.py",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("manifest fit: this process's own grants answer by default", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const start = await manifestOf(dir, [tool("a", "a")]);
    // The test runs with --allow-run and --allow-read: every program and file is granted.
    assert.deepEqual(beyondGrants(start, { start, env: {}, workspace: dir, stateDirs: [] }), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
