// Pins of MCP servers' tool definitions: a definition read back from the pins file is the one that was pinned.
import assert from "node:assert/strict";
import {
  definitionOf,
  pinChanges,
  readPins,
  samePin,
  type ToolDefinition,
  writePins,
} from "../../src/manifest/pins.ts";
import { canonical } from "../../src/base/canonical_json.ts";

Deno.test("pins: a definition with a field left undefined is the same as its pin read back from disk", async () => {
  const state = await Deno.makeTempDir({ prefix: "toolgate_pins_" });
  try {
    // As an upstream server's SDK builds it: an optional field present with the value undefined.
    const current = definitionOf({
      name: "search",
      description: "finds",
      inputSchema: { type: "object", properties: { q: { type: "string", description: undefined } } },
    });
    writePins(state, "/project/tools.json", { docs: { search: current } });
    const pinned: ToolDefinition = readPins(state, "/project/tools.json").docs.search;
    assert.ok(samePin(current, pinned), "the pin read back is the definition pinned");
    assert.deepEqual(pinChanges(pinned, current), []);
  } finally {
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test("canonical JSON: one text for a value and the value read back from JSON; keys sorted", () => {
  const value = { b: [1, { d: undefined, c: null }], a: "x", gone: undefined };
  assert.equal(canonical(value), canonical(JSON.parse(JSON.stringify(value))));
  assert.equal(canonical(value), '{"a":"x","b":[1,{"c":null}]}');
});
