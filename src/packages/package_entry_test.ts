import assert from "node:assert/strict";
import { serverEntryOf } from "./package_entry.ts";

const shape = (command: string, args: string[]) => {
  const entry = serverEntryOf(command, args);
  return entry.kind === "package"
    ? [entry.ecosystem, entry.name, entry.version ?? null, entry.bin ?? null, entry.args]
    : entry.kind;
};

Deno.test("package entries: npx in its usual shapes", () => {
  assert.deepEqual(shape("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/a", "/b"]), [
    "npm",
    "@modelcontextprotocol/server-filesystem",
    null,
    null,
    ["/a", "/b"],
  ]);
  assert.deepEqual(shape("npx", ["--yes", "@scope/pkg@1.2.3"]), ["npm", "@scope/pkg", "1.2.3", null, []]);
  assert.deepEqual(shape("/usr/bin/npx", ["pkg@latest", "--port", "1"]), ["npm", "pkg", "latest", null, [
    "--port",
    "1",
  ]]);
  assert.deepEqual(shape("npx", ["-y", "-p", "@scope/tools@2", "tool-bin", "x"]), [
    "npm",
    "@scope/tools",
    "2",
    "tool-bin",
    ["x"],
  ]);
  assert.deepEqual(shape("npx", ["--package=@s/p", "bin"]), ["npm", "@s/p", null, "bin", []]);
  assert.equal(shape("npx", ["-c", "echo hi"]), "unsupported");
  assert.equal(shape("npx", ["-y"]), "unsupported");
  assert.equal(shape("npx", ["./local.js"]), "unsupported");
});

Deno.test("package entries: uvx, uv tool run, pipx run, deno run npm:", () => {
  assert.deepEqual(shape("uvx", ["mcp-server-time", "--local-timezone=UTC"]), [
    "pypi",
    "mcp-server-time",
    null,
    null,
    ["--local-timezone=UTC"],
  ]);
  assert.deepEqual(shape("uvx", ["mcp-server-git==0.6.2", "--repository", "."]), [
    "pypi",
    "mcp-server-git",
    "0.6.2",
    null,
    ["--repository", "."],
  ]);
  assert.deepEqual(shape("uvx", ["mcp-server-fetch@2025.4.7"]), [
    "pypi",
    "mcp-server-fetch",
    "2025.4.7",
    null,
    [],
  ]);
  assert.deepEqual(shape("uvx", ["--from", "mcp-server-time==1.0", "mcp-server-time"]), [
    "pypi",
    "mcp-server-time",
    "1.0",
    "mcp-server-time",
    [],
  ]);
  assert.deepEqual(shape("uv", ["tool", "run", "pkg"]), ["pypi", "pkg", null, null, []]);
  assert.deepEqual(shape("pipx", ["run", "pkg", "a"]), ["pypi", "pkg", null, null, ["a"]]);
  assert.deepEqual(shape("pipx", ["run", "--spec", "pkg==2", "cmd"]), ["pypi", "pkg", "2", "cmd", []]);
  assert.deepEqual(shape("deno", ["run", "-A", "npm:@s/p@1/bin", "x"]), ["npm", "@s/p", "1", "bin", ["x"]]);
  assert.equal(shape("deno", ["run", "-A", "jsr:@s/p"]), "unsupported");
  assert.equal(shape("deno", ["run", "server.ts"]), "plain");
});

Deno.test("package entries: programs run as written, and docker said plainly", () => {
  assert.equal(shape("node", ["/srv/dist/index.js"]), "plain");
  const module = serverEntryOf("python3", ["-m", "mcp_server_time"]);
  assert.equal(module.kind, "plain");
  assert.match(module.kind === "plain" ? module.note ?? "" : "", /installs nothing.*uvx PACKAGE/);
  const docker = serverEntryOf("docker", ["run", "-i", "--rm", "mcp/time"]);
  assert.match(docker.kind === "unsupported" ? docker.message : "", /not supported.*npx or uvx entry/);
});
