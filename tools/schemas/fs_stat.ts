// fs_stat's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_stat`: get the type, size, modification time and mode of a workspace path. */
export const FS_STAT_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative path inside the workspace, e.g. src or .",
    },
  },
  required: ["path"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
