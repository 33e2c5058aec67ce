// fs_list_dir's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_list_dir`: list the entries of a workspace directory, optionally recursively and filtered by a glob. */
export const FS_LIST_DIR_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      default: ".",
      description: "Relative directory path, e.g. . or src",
    },
    recursive: {
      type: "boolean",
      default: false,
      description: "Descend into subdirectories",
    },
    max_depth: {
      type: "integer",
      minimum: 1,
      maximum: 20,
      default: 3,
      description: "Levels to descend when recursive (1 = direct children)",
    },
    glob: {
      type: "string",
      default: "*",
      description: "Filter, e.g. *.ts (matches names) or src/**/*.ts (matches paths)",
    },
    max_entries: {
      type: "integer",
      minimum: 1,
      maximum: 5000,
      default: 500,
      description: "Most entries to return",
    },
  },
  additionalProperties: false,
} as const satisfies ArgsSchema;
