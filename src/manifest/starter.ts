/**
 * The starter `toolgate init` writes: a manifest with one tool and its program, small enough to read whole, that
 * passes `lint --strict` and runs confined or not with nothing but `/bin/sh` and the standard tools (no runtime
 * under the home folder, which a sandbox would have to show).
 *
 * @module
 */

/** One file of the starter: its path relative to the folder, its text, and whether it is a program. */
export interface StarterFile {
  readonly path: string;
  readonly text: string;
  readonly executable: boolean;
}

/** The starter tool's name. */
export const STARTER_TOOL = "greet_person";

/**
 * The starter tool's program. The schema lets `name` hold only letters, digits, spaces, dots and dashes, so that
 * `sed` can pick it out of the JSON without a JSON parser: toolgate checks the arguments before the program runs.
 */
const STARTER_PROGRAM = `#!/bin/sh
# ${STARTER_TOOL}: toolgate writes the arguments to stdin as one JSON object, already checked against the
# schema in tools.json, and reads one JSON line from stdout. A failure is a JSON object on stderr and a
# non-zero exit. The schema allows only letters, digits, spaces, dots and dashes in "name", so sed can pick
# it out safely; a tool with richer arguments is easier to write in a language with a JSON parser.
args=$(cat)
name=$(printf '%s' "$args" | tr -d '\\n' | sed -n 's/.*"name"[[:space:]]*:[[:space:]]*"\\([^"]*\\)".*/\\1/p')
if [ -z "$name" ]; then
  echo '{"error":"no name was given"}' >&2
  exit 1
fi
printf '{"greeting":"Hello, %s!"}\\n' "$name"
`;

/** The starter manifest, as `tools.json` holds it. */
const STARTER_MANIFEST = {
  tools: [
    {
      name: STARTER_TOOL,
      description: "Greet a person by name, e.g. Ada.",
      schema: {
        type: "object",
        properties: {
          name: {
            type: "string",
            minLength: 1,
            maxLength: 64,
            pattern: "^[A-Za-z0-9 .-]+$",
            description: "The person's name, e.g. Ada Lovelace",
          },
        },
        required: ["name"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { greeting: { type: "string", description: "The greeting, e.g. Hello, Ada!" } },
        required: ["greeting"],
        additionalProperties: false,
      },
      command: [`./tools/bin/${STARTER_TOOL}`],
      timeoutSec: 10,
      readOnly: true,
      permissions: "none",
    },
  ],
};

/**
 * The files of the starter: `tools.json` and the tool's program under `tools/bin/`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { starterFiles } from "./starter.ts";
 * assert.deepEqual(starterFiles().map((file) => file.path), ["tools.json", "tools/bin/greet_person"]);
 * ```
 */
export function starterFiles(): StarterFile[] {
  return [
    { path: "tools.json", text: JSON.stringify(STARTER_MANIFEST, null, 2) + "\n", executable: false },
    { path: `tools/bin/${STARTER_TOOL}`, text: STARTER_PROGRAM, executable: true },
  ];
}
