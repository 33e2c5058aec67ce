// http_fetch's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `http_fetch`: fetch a public http or https URL with GET or HEAD. */
export const HTTP_FETCH_ARGS = {
  type: "object",
  properties: {
    url: {
      type: "string",
      minLength: 1,
      description: "Absolute URL, e.g. https://example.com/page",
      "x-toolgate-risk": true,
    },
    method: {
      type: "string",
      enum: ["GET", "HEAD"],
      default: "GET",
      description: "HTTP method",
      "x-toolgate-risk": true,
    },
    max_bytes: {
      type: "integer",
      minimum: 1,
      maximum: 10485760,
      default: 1048576,
      description: "Most body bytes to return; a longer body is cut",
    },
    timeout_ms: {
      type: "integer",
      minimum: 1,
      maximum: 60000,
      default: 15000,
      description: "Time limit for the whole fetch, redirects included",
    },
    encoding: {
      type: "string",
      enum: ["text", "base64"],
      default: "text",
      description: "Body as text or base64",
    },
    follow_redirects: {
      type: "boolean",
      default: true,
      description: "Follow up to 5 redirects",
    },
  },
  required: ["url"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
