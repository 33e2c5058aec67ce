// fs_read_file's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_read_file`: read a byte range of a workspace file as text or base64. */
export const FS_READ_FILE_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative path inside the workspace, e.g. src/main.ts",
    },
    offset: {
      type: "integer",
      minimum: 0,
      default: 0,
      description: "First byte to read",
    },
    length: {
      type: "integer",
      minimum: 1,
      maximum: 1048576,
      default: 262144,
      description: "Most bytes to read (cap 1048576)",
    },
    encoding: {
      type: "string",
      enum: ["text", "base64"],
      default: "text",
      description: "text (UTF-8) or base64 for binary files",
    },
  },
  required: ["path"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
