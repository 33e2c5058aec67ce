// fs_edit's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_edit`: replace one exact unique string, or a line range, in a workspace text file. */
export const FS_EDIT_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative file path, e.g. src/main.ts",
      "x-toolgate-risk": true,
    },
    new_string: {
      type: "string",
      description: "Replacement text (empty deletes), e.g. const x = 2",
    },
    old_string: {
      type: "string",
      default: "",
      description:
        "Exact text to replace, which must occur exactly once (empty: edit by line range), e.g. const x = 1",
    },
    start_line: {
      type: "integer",
      minimum: 0,
      default: 0,
      description: "First line to replace, 1-based (0 = not editing by line range)",
    },
    end_line: {
      type: "integer",
      minimum: 0,
      default: 0,
      description: "Last line to replace, inclusive (0 = same as start_line)",
    },
    expected_sha256: {
      type: "string",
      default: "",
      description:
        "sha256 hex of the file as last read; the edit fails if it changed, e.g. e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    },
  },
  required: ["path", "new_string"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
