/**
 * HMAC-SHA256 (RFC 2104 over FIPS 180-4), computed synchronously in this thread. The audit log signs two short
 * texts per call; Web Crypto's `sign` is a trip through the runtime's thread pool each time (tens of
 * microseconds, more on a loaded machine, where a warm MCP call through the gateway takes a few hundred), and
 * `node:crypto` would cost every start-up the loading of Node's crypto module (about 20 ms). The outputs are the
 * standard ones: the tests hold them to Web Crypto's for every length around the block boundaries.
 *
 * @module
 */

const K = new Uint32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = [
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
];
const BLOCK = 64;

/** Runs the compression function over every whole 64-byte block of `bytes` from `offset`, updating `state`. */
function compress(state: Uint32Array, w: Uint32Array, bytes: Uint8Array, offset: number, end: number): void {
  for (let at = offset; at + BLOCK <= end; at += BLOCK) {
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4;
      w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15];
      const b = w[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = state[0], b = state[1], c = state[2], d = state[3];
    let e = state[4], f = state[5], g = state[6], h = state[7];
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + s1 + ch + K[i] + w[i]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
  }
}

/** Finishes a hash whose state has absorbed `absorbed` bytes, with `tail` (under 64 bytes... or more) left. */
function finish(state: Uint32Array, w: Uint32Array, message: Uint8Array, prefixBytes: number): Uint8Array {
  const whole = message.length - (message.length % BLOCK);
  compress(state, w, message, 0, whole);
  const rest = message.length - whole;
  const last = new Uint8Array(rest < 56 ? BLOCK : 2 * BLOCK);
  last.set(message.subarray(whole));
  last[rest] = 0x80;
  const bits = (prefixBytes + message.length) * 8;
  const view = new DataView(last.buffer);
  view.setUint32(last.length - 8, Math.floor(bits / 2 ** 32));
  view.setUint32(last.length - 4, bits >>> 0);
  compress(state, w, last, 0, last.length);
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(i * 4, state[i]);
  return out;
}

/**
 * An HMAC-SHA256 key: its inner and outer padded blocks absorbed once, so that each digest costs the message's
 * blocks and one more.
 *
 * @example
 * ```ts
 * import { HmacSha256 } from "./hmac_sha256.ts";
 * const mac = new HmacSha256(new TextEncoder().encode("key"));
 * mac.hex(new TextEncoder().encode("The quick brown fox jumps over the lazy dog"));
 * // "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
 * ```
 */
export class HmacSha256 {
  readonly #inner = new Uint32Array(8);
  readonly #outer = new Uint32Array(8);
  readonly #w = new Uint32Array(64);

  /** Takes the key as HMAC does: hashed first when longer than a block. */
  constructor(key: Uint8Array) {
    const block = new Uint8Array(BLOCK);
    block.set(key.length > BLOCK ? sha256(key) : key);
    const pad = new Uint8Array(BLOCK);
    for (const [state, byte] of [[this.#inner, 0x36], [this.#outer, 0x5c]] as const) {
      state.set(INITIAL);
      for (let i = 0; i < BLOCK; i++) pad[i] = block[i] ^ byte;
      compress(state, this.#w, pad, 0, BLOCK);
    }
  }

  /** The 32-byte digest of `message`. */
  sign(message: Uint8Array): Uint8Array {
    const inner = finish(this.#inner.slice(), this.#w, message, BLOCK);
    return finish(this.#outer.slice(), this.#w, inner, BLOCK);
  }

  /** The digest of `message` as 64 lowercase hex digits. */
  hex(message: Uint8Array): string {
    let text = "";
    for (const byte of this.sign(message)) text += HEX[byte];
    return text;
  }
}

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * The SHA-256 digest of `message`.
 *
 * @example
 * ```ts
 * import { sha256 } from "./hmac_sha256.ts";
 * sha256(new Uint8Array()).length; // 32
 * ```
 */
export function sha256(message: Uint8Array): Uint8Array {
  const state = new Uint32Array(INITIAL);
  return finish(state, new Uint32Array(64), message, 0);
}
