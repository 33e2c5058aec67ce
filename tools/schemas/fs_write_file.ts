// fs_write_file's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_write_file`: write the whole contents of a workspace file atomically, replacing any previous contents. */
export const FS_WRITE_FILE_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative file path, e.g. notes/todo.md",
      "x-toolgate-risk": true,
    },
    content: {
      type: "string",
      description: "The complete new contents, e.g. # Todo\\n- ship it\\n",
    },
    encoding: {
      type: "string",
      enum: ["text", "base64"],
      default: "text",
      description: "How content is encoded: text (UTF-8) or base64",
    },
    create_parents: {
      type: "boolean",
      default: false,
      description: "Create missing parent directories",
    },
  },
  required: ["path", "content"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
