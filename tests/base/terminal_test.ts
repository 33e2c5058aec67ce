/** Text for a terminal: every control character visible, nothing that can drive the terminal left. */
import assert from "node:assert/strict";
import { neutralizeControls, plainLine } from "../../src/base/terminal.ts";

Deno.test("neutralizeControls: OSC titles and clipboard writes, CSI, BEL and CR become visible", () => {
  assert.equal(neutralizeControls("\x1b]0;pwned\x07"), "␛]0;pwned␇");
  assert.equal(neutralizeControls("\x1b]52;c;cHduZWQ=\x1b\\"), "␛]52;c;cHduZWQ=␛\\");
  assert.equal(neutralizeControls("\x1b[2J\x1b[H"), "␛[2J␛[H");
  assert.equal(neutralizeControls("real\rfake"), "real␍fake");
  assert.equal(neutralizeControls("\x00\x7f"), "␀␡");
});

Deno.test("neutralizeControls: C1 controls, bidi overrides and invisible characters show their codes", () => {
  assert.equal(neutralizeControls("\u009b31m"), "\\u{9b}31m");
  assert.equal(
    neutralizeControls("a\u202eb\u202cc\u2066d\u2069"),
    "a\\u{202e}b\\u{202c}c\\u{2066}d\\u{2069}",
  );
  assert.equal(neutralizeControls("x\u200by\ufeff"), "x\\u{200b}y\\u{feff}");
});

Deno.test("neutralizeControls: text, tabs, newlines and characters past ASCII stay as they are", () => {
  const text = "Hello, wörld! 😀\n\tindented — “quoted” 日本語\n";
  assert.equal(neutralizeControls(text), text);
});

Deno.test("plainLine: escape sequences go whole, other controls and invisible characters go, spaces fold", () => {
  assert.equal(plainLine("\x1b[1;32m✓\x1b[0m built"), "✓ built");
  assert.equal(plainLine("\x1b]0;title\x07\x1b]52;c;ZXZpbA==\x1b\\done"), "done");
  assert.equal(plainLine("\x1bPq#0;2;0;0;0\x1b\\after"), "after", "a DCS (sixel) goes whole");
  assert.equal(plainLine("a\x9b2Jb\u202ec\u200bd"), "abcd", "a C1 CSI, a bidi override, a zero-width space");
  assert.equal(plainLine("  tab\there\x07\x08  "), "tab here");
  assert.equal(plainLine("\x1b]0;never ended"), "", "an OSC left open runs to the end");
  for (const text of ["\x1b[2J", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\x1bc\x1b7\x1b8"]) {
    // deno-lint-ignore no-control-regex
    assert.doesNotMatch(plainLine(text), /[\x00-\x1f\x7f-\x9f]/, JSON.stringify(text));
  }
});
