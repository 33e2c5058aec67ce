/**
 * The check that an MCP server's tool is handed only what its pinned schema declares, attacked with arguments nested
 * deeper than the check looks.
 *
 * @module
 */
import assert from "node:assert/strict";
import { undeclaredArgument } from "../../src/manifest/declared_arguments.ts";

Deno.test("declared arguments: an undeclared key nested deeper than the search looks is refused, not let through", () => {
  // A tree: each node declares `children`, a list of nodes; an extra key 40 levels down is still undeclared.
  const schema = {
    type: "object",
    properties: { children: { type: "array", items: { $ref: "#" } } },
  };
  let args: Record<string, unknown> = { sneaked: "x" };
  for (let level = 0; level < 40; level++) args = { children: [args] };
  const found = undeclaredArgument(args, schema);
  assert.ok(found !== undefined, "the nested undeclared key was let through");
  assert.match(found, /^children\[0\]/);
  // A tree of declared keys only, as deep, is refused too (it cannot be checked), but a shallow one passes.
  let shallow: Record<string, unknown> = {};
  for (let level = 0; level < 5; level++) shallow = { children: [shallow] };
  assert.equal(undeclaredArgument(shallow, schema), undefined);
});
