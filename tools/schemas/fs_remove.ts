// fs_remove's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_remove`: remove a file, symlink or directory in the workspace. */
export const FS_REMOVE_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative path, e.g. build/old.txt",
      "x-toolgate-risk": true,
    },
    recursive: {
      type: "boolean",
      default: false,
      description: "Remove a non-empty directory and everything in it",
      "x-toolgate-risk": true,
    },
  },
  required: ["path"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
