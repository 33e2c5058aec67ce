// fs_mkdir's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_mkdir`: create a directory in the workspace. */
export const FS_MKDIR_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative directory path, e.g. notes/2026",
      "x-toolgate-risk": true,
    },
    parents: {
      type: "boolean",
      default: false,
      description: "Create missing parent directories",
    },
  },
  required: ["path"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
