/**
 * toolgate's own HMAC-SHA256 (the audit log signs with it in this thread) gives exactly Web Crypto's digests: for
 * RFC 4231's vectors, and for random keys and messages of every length around the 64-byte block boundaries.
 */
import assert from "node:assert/strict";
import { HmacSha256, sha256 } from "../../src/base/hmac_sha256.ts";

const encoder = new TextEncoder();
const hex = (bytes: ArrayBuffer | Uint8Array) =>
  Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const bytesOf = (text: string) => new Uint8Array(text.match(/../g)!.map((pair) => parseInt(pair, 16)));

Deno.test("hmac_sha256: RFC 4231's test cases 1, 2, 4 and 6 (a key longer than a block)", () => {
  const cases: [Uint8Array, Uint8Array, string][] = [
    [
      new Uint8Array(20).fill(0x0b),
      encoder.encode("Hi There"),
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    ],
    [
      encoder.encode("Jefe"),
      encoder.encode("what do ya want for nothing?"),
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    ],
    [
      bytesOf("0102030405060708090a0b0c0d0e0f10111213141516171819"),
      new Uint8Array(50).fill(0xcd),
      "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
    ],
    [
      new Uint8Array(131).fill(0xaa),
      encoder.encode("Test Using Larger Than Block-Size Key - Hash Key First"),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
    ],
  ];
  for (const [key, message, digest] of cases) assert.equal(new HmacSha256(key).hex(message), digest);
});

Deno.test("hmac_sha256: the same digests as Web Crypto for every message length up to 300 bytes", async () => {
  for (const keyLength of [1, 32, 64, 65]) {
    const key = crypto.getRandomValues(new Uint8Array(keyLength));
    const webKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    const mac = new HmacSha256(key);
    for (let length = 0; length <= 300; length++) {
      const message = crypto.getRandomValues(new Uint8Array(length));
      assert.equal(mac.hex(message), hex(await crypto.subtle.sign("HMAC", webKey, message)), `${length}`);
      // The key's pads are absorbed once: signing again gives the same digest.
      assert.equal(hex(mac.sign(message)), mac.hex(message));
      if (keyLength === 1) {
        assert.equal(hex(sha256(message)), hex(await crypto.subtle.digest("SHA-256", message)), `${length}`);
      }
    }
  }
});
