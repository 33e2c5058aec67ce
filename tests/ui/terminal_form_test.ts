/** A tool's form asked on the terminal: defaults, enums (plain, titled, legacy), multi-select, decline, cancel. @module */
import assert from "node:assert/strict";
import { askForm, askUrl } from "../../src/ui/terminal_form.ts";

/** Answers the form with `lines` in turn (null: input ended); returns the answer and what was written. */
async function form(schema: Record<string, unknown>, lines: (string | null)[]) {
  let shown = "";
  const answer = await askForm(
    { message: "Pick\x1b[31m", requestedSchema: { type: "object", ...schema } },
    (prompt) => {
      shown += prompt;
      return Promise.resolve(lines.length > 0 ? lines.shift()! : null);
    },
    (text) => Promise.resolve(void (shown += text)),
    "t",
  );
  return { answer, shown };
}

Deno.test("an empty line takes each field's default, typed as the field says", async () => {
  const { answer } = await form({
    properties: {
      name: { type: "string", default: "John Doe" },
      age: { type: "integer", default: 30 },
      score: { type: "number" },
      verified: { type: "boolean", default: true },
    },
  }, ["", "", "95.5", ""]);
  assert.deepEqual(answer, {
    action: "accept",
    content: { name: "John Doe", age: 30, score: 95.5, verified: true },
  });
});

Deno.test("enums are picked by number or value; titled and multi-select give the tool the values", async () => {
  const { answer, shown } = await form({
    properties: {
      plain: { type: "string", enum: ["a", "b"] },
      titled: { type: "string", oneOf: [{ const: "v1", title: "First" }, { const: "v2", title: "Second" }] },
      legacy: { type: "string", enum: ["o1", "o2"], enumNames: ["One", "Two"] },
      multi: { type: "array", items: { anyOf: [{ const: "x", title: "Ex" }, { const: "y", title: "Why" }] } },
    },
  }, ["b", "2", "One", "1, Why"]);
  assert.deepEqual(answer, {
    action: "accept",
    content: { plain: "b", titled: "v2", legacy: "o1", multi: ["x", "y"] },
  });
  assert.match(shown, /1\) First {2}2\) Second/);
  assert.ok(!shown.includes("\x1b"), "the tool's control characters are neutralized");
});

Deno.test("a value that does not fit is asked again; ! declines; the end of input cancels", async () => {
  const schema = { properties: { n: { type: "integer" } }, required: ["n"] };
  assert.deepEqual((await form(schema, ["x", "4"])).answer, { action: "accept", content: { n: 4 } });
  assert.deepEqual((await form(schema, ["!"])).answer, { action: "decline" });
  assert.deepEqual((await form(schema, [null])).answer, { action: "cancel" });
  assert.deepEqual((await form(schema, ["x", "y", "z"])).answer, { action: "cancel" });
});

Deno.test("a page is shown whole with its host, control characters neutralized; y accepts, n declines, the end cancels", async () => {
  const ask = async (lines: (string | null)[]) => {
    let shown = "";
    const answer = await askUrl(
      { message: "Sign in\x1b]0;x\x07", url: "https://xn--e1afmkfd.example/a?b=c", elicitationId: "e1" },
      (prompt) => {
        shown += prompt;
        return Promise.resolve(lines.length > 0 ? lines.shift()! : null);
      },
      (text) => Promise.resolve(void (shown += text)),
      "t",
    );
    return { answer, shown };
  };
  const { answer, shown } = await ask(["maybe", "y"]);
  assert.deepEqual(answer, { action: "accept" });
  assert.match(shown, /The tool t asks you to open a page in your browser \(toolgate does not open it\)/);
  assert.match(shown, /https:\/\/xn--e1afmkfd\.example\/a\?b=c \(host xn--e1afmkfd\.example\)/);
  assert.ok(!shown.includes("\x1b"), shown);
  assert.deepEqual((await ask(["n"])).answer, { action: "decline" });
  assert.deepEqual((await ask([null])).answer, { action: "cancel" });
  assert.deepEqual((await ask(["a", "b", "c"])).answer, { action: "cancel" });
});
