import assert from "node:assert/strict";
import {
  fixedGrantsFinding,
  fixedGrantsLine,
  missingGrants,
  type NeededGrant,
} from "../../src/launcher/fixed_grants.ts";
import type { PermissionSet } from "../../src/launcher/own_grants.ts";

const SET: PermissionSet = {
  read: ["/srv/project", "/opt/toolgate/src", "/usr"],
  write: ["/home/me/.local/state/toolgate"],
  run: ["/usr/bin/bwrap", "/srv/project/tools/bin/mine"],
  env: ["PATH", "GITHUB_TOKEN"],
  net: ["10.0.0.5:8000", "unix:/home/me/.local/state/toolgate/proxy/x.sock"],
  sys: ["uid"],
};

Deno.test("missingGrants: what the run needs and the process lacks; its own code, its tools' programs and the proxy's socket aside", () => {
  const asked: NeededGrant[] = [];
  const held = (grant: NeededGrant) => {
    asked.push(grant);
    return ["/usr", "/home/me/.local/state/toolgate", "/usr/bin/bwrap", "PATH", "uid"].includes(grant.value);
  };
  const missing = missingGrants(SET, {
    code: ["/opt/toolgate/src"],
    programs: ["/srv/project/tools/bin/mine"],
  }, held);
  assert.deepEqual(missing, [
    { name: "read", value: "/srv/project" },
    { name: "env", value: "GITHUB_TOKEN" },
    { name: "net", value: "10.0.0.5:8000" },
  ]);
  const values = asked.map((grant) => grant.value);
  for (const skipped of ["/opt/toolgate/src", "/srv/project/tools/bin/mine"]) {
    assert.ok(!values.includes(skipped));
  }
  assert.ok(!values.some((value) => value.startsWith("unix:")));
});

Deno.test("fixedGrantsLine: one line naming at most four grants, and what to run instead", () => {
  const many = ["a", "b", "c", "d", "e", "f"].map((value) => ({ name: "read" as const, value: `/${value}` }));
  const line = fixedGrantsLine(many);
  assert.equal(line.split("\n").length, 2, "one line and its newline");
  assert.match(line, /it lacks read \/a, read \/b, read \/c, read \/d, 2 more /);
  assert.match(line, /deno task install/);
});

Deno.test("fixedGrantsFinding: a missing file, host or program stops the run; missing variables alone warn", () => {
  assert.equal(fixedGrantsFinding([]), undefined);
  const env = fixedGrantsFinding([{ name: "env", value: "LANG" }, { name: "env", value: "GITHUB_TOKEN" }]);
  assert.equal(env?.fatal, false);
  assert.match(
    env?.line ?? "",
    /^toolgate: warning: this binary cannot read LANG, GITHUB_TOKEN for its tools/,
  );
  const both = fixedGrantsFinding([{ name: "env", value: "LANG" }, { name: "net", value: "10.0.0.5:8000" }]);
  assert.equal(both?.fatal, true);
  assert.match(both?.line ?? "", /it lacks net 10\.0\.0\.5:8000 \(/);
});
