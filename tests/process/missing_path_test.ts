/** What a failed start's stderr says was not found, and which folder a profile's `read` lacks. */
import assert from "node:assert/strict";
import { hiddenPaths, missingPaths, readFolderFor } from "../../src/process/missing_path.ts";

Deno.test("missing path: the lines Node, Python and the shells write name the path; a stack frame does not", () => {
  const node = [
    "node:internal/modules/cjs/loader:1228",
    "  throw err;",
    "Error: Cannot find module '/home/me/srv/node_modules/x/dist/index.js'",
    "    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15) /usr/lib/node.js",
    "Node.js v20.19.2",
  ].join("\n");
  assert.deepEqual(missingPaths(node), { said: true, paths: ["/home/me/srv/node_modules/x/dist/index.js"] });
  assert.deepEqual(
    missingPaths("Error: ENOENT: no such file or directory, open '/home/me/.data/memory.json'").paths,
    ["/home/me/.data/memory.json"],
  );
  assert.deepEqual(
    missingPaths("python3: can't open file '/home/me/srv/main.py': [Errno 2] No such file or directory")
      .paths,
    ["/home/me/srv/main.py"],
  );
  assert.deepEqual(missingPaths("/srv/p/tools/bin/t: 3: /home/me/.hidden/helper: not found").paths, [
    "/srv/p/tools/bin/t",
    "/home/me/.hidden/helper",
  ]);
  assert.deepEqual(missingPaths("bash: /opt/x/run: No such file or directory").paths, ["/opt/x/run"]);
  assert.deepEqual(missingPaths("listening on stdio\nready"), { said: false, paths: [] });
});

Deno.test("missing path: the folder to read is a package's node_modules, else the file's folder; shown paths are left out", () => {
  assert.equal(
    readFolderFor("/home/me/srv/node_modules/@scope/pkg/dist/index.js"),
    "/home/me/srv/node_modules",
  );
  assert.equal(readFolderFor("/home/me/.hidden/helper"), "/home/me/.hidden");
  assert.deepEqual(
    hiddenPaths(["/srv/p/tools/bin/t", "/home/me/.hidden/helper", "/usr/bin/node"], ["/usr", "/srv/p/tools"]),
    ["/home/me/.hidden/helper"],
  );
  // A profile that reads everything shows everything.
  assert.deepEqual(hiddenPaths(["/home/me/x"], ["/"]), []);
  // A sibling folder's prefix is not inside.
  assert.deepEqual(hiddenPaths(["/srv/project2/a"], ["/srv/project"]), ["/srv/project2/a"]);
});
