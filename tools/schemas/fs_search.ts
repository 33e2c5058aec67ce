// fs_search's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_search`: search workspace files for lines containing a literal string or matching a regular expression. */
export const FS_SEARCH_ARGS = {
  type: "object",
  properties: {
    pattern: {
      type: "string",
      minLength: 1,
      description: "Text to find, e.g. TODO, or a regex such as fn\\s+main",
    },
    path: {
      type: "string",
      default: ".",
      description: "Relative file or directory to search, e.g. src or src/main.ts",
    },
    regex: {
      type: "boolean",
      default: false,
      description: "Treat pattern as a JavaScript regex",
    },
    case_sensitive: {
      type: "boolean",
      default: true,
      description: "Match case exactly",
    },
    glob: {
      type: "string",
      default: "*",
      description: "File filter, e.g. *.ts (matches names) or src/**/*.ts (matches paths)",
    },
    max_results: {
      type: "integer",
      minimum: 1,
      maximum: 2000,
      default: 100,
      description: "Most matching lines to return",
    },
    max_file_bytes: {
      type: "integer",
      minimum: 1,
      maximum: 16777216,
      default: 1048576,
      description: "Larger files are skipped",
    },
  },
  required: ["pattern"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
