/**
 * The bundle's files rewritten once after `deno bundle`, for start-up: what the runtime reads before a command's
 * first line runs is cut to what that command's own static graph holds.
 *
 * - The bundler's `require` for CommonJS code becomes lazy: it lives in the chunk of shared helpers that nearly
 *   every module imports, so its static `node:module` import would load Deno's Node layer (about 15 ms) at every
 *   start, although only the worker pool's npm client ever calls it.
 * - Dynamic imports are hidden from the runtime's look-ahead: Deno reads and analyses every file a literal
 *   `import("./x.js")` names, and every file those import, before the first line runs. A warm `toolgate call`
 *   read 121 files (2 MB: the gateway's MCP SDK and zod, x509, ajv) to run 78 of them (570 KB), some 8 ms of CPU
 *   of every start. `import(String("./x.js"))` loads the same file when the command runs, under the main
 *   process's read access to the bundle's folder.
 * - Except where the importing process holds no read access to the bundle: the egress bridge runs `main.js`
 *   under a tool's narrow grants inside the sandbox, so the modules it loads (and everything those load) keep
 *   their literal imports, which the runtime resolves without a permission check. (Tool mode, `main.js __tool`,
 *   is the compiled binary's, whose graph comes from the source, and a bundle's without `belt/` entries, which
 *   this build always writes: a built-in tool runs from its own entry, `belt/NAME.js`.)
 *
 * @module
 */
import { join } from "../base/paths.ts";

/** The bundler's shared `require` for CommonJS code, bound at load through a static import of `node:module`. */
const EAGER_REQUIRE = 'import { createRequire as __deno_internal_createRequire } from "node:module";\n' +
  "var __require = __deno_internal_createRequire(import.meta.url);";
/** The same `require`, made at its first use (`process.getBuiltinModule` needs no import). */
const LAZY_REQUIRE = "var __deno_internal_require;\n" +
  "var __require = (id) => (__deno_internal_require ??= " +
  'process.getBuiltinModule("node:module").createRequire(import.meta.url))(id);';

/**
 * What `main.js` loads for a process under a tool's narrow grants (no read access to the bundle): the egress
 * bridge inside a sandbox, and the module that names the modes.
 */
export const NARROW_MODES: readonly string[] = ["tool_belt", "net_bridge"];

/** A literal dynamic import of a file of the bundle's folder, as the bundler writes it. */
const DYNAMIC_IMPORT = /import\("(\.\/[^"/]+\.js)"\)/g;
/** A static import or re-export of another file of the bundle. */
const STATIC_IMPORT = /(?:from|import)\s*"(\.\.?\/[^"]+\.js)"/g;

/** The chunk's name without the bundler's hash: `tool_mode` of `./tool_mode-DMS7CRQN.js`. */
function chunkName(specifier: string): string {
  return specifier.replace(/^\.\//, "").replace(/-[A-Z0-9]+\.js$/, "");
}

/** A specifier of `from` (a path inside the bundle), as a path inside the bundle. */
function resolved(from: string, specifier: string): string {
  return new URL(specifier, `file:///${from}`).pathname.slice(1);
}

/**
 * The files a process under narrow grants may load: `main.js`'s narrow modes, the built-in tools' own entries
 * (`belt/`), and everything those import, statically or not.
 */
function narrowFiles(texts: ReadonlyMap<string, string>): Set<string> {
  const main = texts.get("main.js") ?? "";
  const todo = [
    ...[...main.matchAll(DYNAMIC_IMPORT)].map((match) => match[1])
      .filter((specifier) => NARROW_MODES.includes(chunkName(specifier)))
      .map((specifier) => resolved("main.js", specifier)),
    ...[...texts.keys()].filter((file) => file.startsWith("belt/")),
  ];
  const seen = new Set<string>();
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = texts.get(file) ?? "";
    for (const match of [...text.matchAll(STATIC_IMPORT), ...text.matchAll(DYNAMIC_IMPORT)]) {
      todo.push(resolved(file, match[1]));
    }
  }
  return seen;
}

/**
 * One file's text, tuned (see the module's documentation); `narrow`: the file may run under narrow grants.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tuneText } from "./tune_bundle.ts";
 * assert.equal(tuneText("main.js", 'await import("./serve_mcp-AB12CD34.js");', false), 'await import(String("./serve_mcp-AB12CD34.js"));');
 * tuneText("main.js", 'await import("./net_bridge-AB12CD34.js");', false); // unchanged: the bridge runs narrow
 * ```
 */
export function tuneText(file: string, text: string, narrow: boolean): string {
  const lazy = text.replace(EAGER_REQUIRE, LAZY_REQUIRE);
  if (narrow) return lazy;
  return lazy.replace(
    DYNAMIC_IMPORT,
    (literal, specifier: string) =>
      file === "main.js" && NARROW_MODES.includes(chunkName(specifier))
        ? literal
        : `import(String("${specifier}"))`,
  );
}

/** Rewrites the bundle's files in `dir` (its top folder and `belt/`), one pass over them. */
export async function tuneBundle(dir: string): Promise<void> {
  const texts = new Map<string, string>();
  for (const folder of ["", "belt"]) {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(join(dir, folder))];
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    for (const entry of entries) {
      if (!entry.isFile || !entry.name.endsWith(".js")) continue;
      const file = folder === "" ? entry.name : `${folder}/${entry.name}`;
      texts.set(file, await Deno.readTextFile(join(dir, file)));
    }
  }
  const narrow = narrowFiles(texts);
  for (const [file, text] of texts) {
    const tuned = tuneText(file, text, narrow.has(file));
    if (tuned !== text) await Deno.writeTextFile(join(dir, file), tuned);
  }
}
