/** Text for a terminal: every control character visible, nothing that can drive the terminal left. */
import assert from "node:assert/strict";
import { neutralizeControls } from "../../src/base/terminal.ts";

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
