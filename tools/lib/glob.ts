/**
 * Glob patterns for the listing and search tools: `*` (any run without `/`), `**` (any run, `/` included),
 * `?`, `[abc]` / `[!abc]` classes and `{a,b}` alternatives. A pattern without `/` matches an entry's name; a
 * pattern with `/` matches its path relative to the directory being walked.
 *
 * @module
 */
import { invalidArgs } from "./envelope.ts";

/** A compiled glob. */
export interface Glob {
  /** Does the entry (its name, and its path relative to the walk's root) match? */
  matches(name: string, relPath: string): boolean;
}

/**
 * Compiles a glob, or throws an `invalid_args` failure naming `field`.
 *
 * @example
 * ```ts
 * import { compileGlob } from "./glob.ts";
 * compileGlob("*.ts").matches("main.ts", "src/main.ts"); // true
 * compileGlob("src/**\/*.ts").matches("a.ts", "src/x/a.ts"); // true
 * ```
 */
export function compileGlob(pattern: string, field = "glob"): Glob {
  if (pattern === "" || pattern === "*" || pattern === "**") return { matches: () => true };
  let regex: RegExp;
  try {
    regex = new RegExp(`^${globToRegExpSource(pattern)}$`);
  } catch {
    throw invalidArgs(
      field,
      `${field} is not a valid glob: ${JSON.stringify(pattern)}`,
      "a glob such as *.ts or src/**/*.md",
    );
  }
  const byPath = pattern.includes("/");
  return { matches: (name, relPath) => regex.test(byPath ? relPath : name) };
}

function globToRegExpSource(pattern: string): string {
  let out = "";
  let braces = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") {
      if (pattern[i + 1] === "*") {
        i++;
        // `**/` also matches no directory at all.
        if (pattern[i + 1] === "/") {
          i++;
          out += "(?:.*/)?";
        } else {
          out += ".*";
        }
      } else {
        out += "[^/]*";
      }
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end === -1) {
        out += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      out += `[${negated ? "^" : ""}${body.replaceAll("\\", "\\\\").replaceAll("]", "\\]")}]`;
      i = end;
    } else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) {
      out += "|";
    } else {
      out += c.replace(/[.+^$()|\\{}\]]/g, "\\$&");
    }
  }
  return out;
}
