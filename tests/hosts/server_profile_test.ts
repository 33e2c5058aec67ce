// The profile an imported server's entry calls for (src/hosts/server_profile.ts): exactly the paths it is given,
// by what the server does with them, and never a network grant: a URL it is given is said instead.
import assert from "node:assert/strict";
import { proposeProfile } from "../../src/hosts/server_profile.ts";

const folders = (...known: string[]) => (path: string) =>
  known.includes(path) ? "dir" as const : known.includes(path + "#file") ? "file" as const : undefined;

Deno.test("profile: a URL in a server's arguments or environment is said, never granted", () => {
  const proposal = proposeProfile(
    {
      command: "npx",
      args: ["-y", "mcp-remote", "https://mcp.example.com/sse"],
      env: { API: "http://10.0.0.2:8080" },
    },
    "/p",
    "/h",
    folders(),
  );
  assert.equal(proposal.permissions, "none");
  assert.deepEqual(proposal.lines, [
    'it is given https://mcp.example.com: no network is granted; add "mcp.example.com" to permissions.net if it must reach it',
    'it is given http://10.0.0.2: no network is granted; add "10.0.0.2" to permissions.net if it must reach it',
  ]);
});

Deno.test("profile: the filesystem server writes its roots, ~ and ./ resolved; a version pin does not hide the package", () => {
  const proposal = proposeProfile(
    {
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-filesystem@2025.8.21", "~/notes", "./data"],
    },
    "/p",
    "/h",
    folders("/h/notes", "/p/data"),
  );
  assert.deepEqual(proposal.permissions, { read: [], write: ["/h/notes", "/p/data"], net: false });
});

Deno.test("profile: the memory server without MEMORY_FILE_PATH gets a data file in the project (its install is read-only once pinned)", () => {
  const proposal = proposeProfile(
    { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] },
    "/p",
    "/h",
  );
  assert.deepEqual(proposal.permissions, { read: [], write: ["/p/.mcp-memory"], net: false });
  assert.deepEqual(proposal.env, { MEMORY_FILE_PATH: "/p/.mcp-memory/memory.jsonl" });
  assert.deepEqual(proposal.folders, ["/p/.mcp-memory"]);
  assert.match(proposal.lines.join("\n"), /write \/p\/\.mcp-memory \(its data: MEMORY_FILE_PATH set to/);
});

Deno.test("profile: the memory server writes its data file's folder, where it writes the file anew and renames it over", () => {
  const proposal = proposeProfile(
    {
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-memory"],
      env: { MEMORY_FILE_PATH: "/p/data/memory.jsonl" },
    },
    "/p",
    "/h",
    folders("/p/data", "/p/data/memory.jsonl#file"),
  );
  assert.deepEqual(proposal.permissions, { read: [], write: ["/p/data"], net: false });
  assert.match(
    proposal.lines.join("\n"),
    /write \/p\/data \(the folder of its MEMORY_FILE_PATH: it writes memory\.jsonl anew/,
  );
});

Deno.test("profile: the git server writes its --repository (either spelling); without one, it is said", () => {
  for (
    const args of [["mcp-server-git", "--repository", "/srv/repo"], [
      "mcp-server-git",
      "--repository=/srv/repo",
    ]]
  ) {
    const proposal = proposeProfile({ command: "uvx", args }, "/p", "/h", folders("/srv/repo"));
    assert.deepEqual(proposal.permissions, { read: [], write: ["/srv/repo"], net: false }, args.join(" "));
  }
  const bare = proposeProfile({ command: "uvx", args: ["mcp-server-git"] }, "/p", "/h");
  assert.equal(bare.permissions, "none");
  assert.match(bare.lines[0], /no --repository/);
});

Deno.test("profile: a node FILE outside node_modules reads its package (the nearest package.json), nothing more", () => {
  const kind = (path: string) =>
    path === "/opt/srv/package.json"
      ? "file" as const
      : path === "/opt/srv/dist/index.js"
      ? "file" as const
      : undefined;
  const proposal = proposeProfile(
    { command: "/usr/bin/node", args: ["/opt/srv/dist/index.js"] },
    "/p",
    "/h",
    kind,
  );
  assert.deepEqual(proposal.permissions, { read: ["/opt/srv"], write: [], net: false });
});

Deno.test("profile: another existing path it is given is read, a missing one is not, and nothing is written", () => {
  const proposal = proposeProfile(
    { command: "uvx", args: ["some-server", "--config", "/etc/some/config.yaml", "/nowhere"] },
    "/p",
    "/h",
    folders("/etc/some/config.yaml#file"),
  );
  assert.deepEqual(proposal.permissions, { read: ["/etc/some/config.yaml"], write: [], net: false });
  assert.match(proposal.lines[0], /add it to write if it changes it/);
});
