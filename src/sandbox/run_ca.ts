/**
 * The certificate authority of one toolgate run, for the credential broker: made in memory when the first call
 * with a bound credential starts, never written down (only its certificate is, in the CA bundle the sandbox
 * trusts), gone with the process. It signs a certificate for each bound host the proxy terminates TLS for. The
 * X.509 library loads only then: a run without credentials never pays for it.
 *
 * @module
 */

/** A certificate and its private key, both PEM. */
export interface CertPair {
  readonly cert: string;
  readonly key: string;
}

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
/** Where the common systems keep their CA bundle, first found wins. */
export const SYSTEM_CA_FILES: readonly string[] = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/ca-bundle.pem",
  "/etc/ssl/cert.pem",
];

function serial(): string {
  // A positive serial: the top bit clear.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f;
  return bytes.toHex();
}

/**
 * A certificate authority (self-signed, ECDSA P-256, one day) and the certificates it signs; `name` goes in the
 * subject. Also what tests use to stand for a real server's CA.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CertificateAuthority } from "./run_ca.ts";
 * const ca = await CertificateAuthority.create("example CA");
 * const leaf = await ca.issue("localhost");
 * assert.ok(leaf.cert.startsWith("-----BEGIN CERTIFICATE-----"));
 * ```
 */
export class CertificateAuthority {
  readonly #key: CryptoKey;
  readonly #subject: string;
  readonly #issued = new Map<string, Promise<CertPair>>();

  private constructor(readonly cert: string, key: CryptoKey, subject: string) {
    this.#key = key;
    this.#subject = subject;
  }

  /** A new authority; its private key cannot be exported (it never leaves this process). */
  static async create(name: string): Promise<CertificateAuthority> {
    const x509 = await import("npm:@peculiar/x509@1.12.3");
    x509.cryptoProvider.set(crypto);
    const keys = await crypto.subtle.generateKey(ALGORITHM, false, ["sign", "verify"]);
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=${name}`,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 24 * 3600_000),
      keys,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    });
    return new CertificateAuthority(cert.toString("pem"), keys.privateKey, cert.subject);
  }

  /** A server certificate for `host` (a name or an IP address), made once per host. */
  issue(host: string): Promise<CertPair> {
    const name = host.replace(/^\[|\]$/g, "").toLowerCase();
    let pair = this.#issued.get(name);
    if (pair === undefined) {
      pair = this.#make(name);
      this.#issued.set(name, pair);
    }
    return pair;
  }

  async #make(host: string): Promise<CertPair> {
    const x509 = await import("npm:@peculiar/x509@1.12.3");
    const keys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
    const ip = /^[0-9.]+$/.test(host) || host.includes(":");
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${host}`,
      issuer: this.#subject,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 24 * 3600_000),
      signingKey: this.#key,
      publicKey: keys.publicKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.SubjectAlternativeNameExtension([{ type: ip ? "ip" : "dns", value: host }]),
        new x509.BasicConstraintsExtension(false),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      ],
    });
    const pkcs8 = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
    return { cert: cert.toString("pem"), key: x509.PemConverter.encode(pkcs8, "PRIVATE KEY") };
  }
}

/**
 * The CA bundle a sandbox trusts: the system's CAs (the first of {@linkcode SYSTEM_CA_FILES} found) and the run's
 * CA certificate, so that every other host still verifies.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { caBundle } from "./run_ca.ts";
 * assert.ok(caBundle("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n", []).includes("BEGIN"));
 * ```
 */
export function caBundle(runCa: string, systemFiles: readonly string[] = SYSTEM_CA_FILES): string {
  for (const file of systemFiles) {
    try {
      const system = Deno.readTextFileSync(file);
      return `${system.trimEnd()}\n${runCa}`;
    } catch {
      // Not this one.
    }
  }
  return runCa;
}

/** The variables through which common runtimes take a CA bundle (curl, OpenSSL, Python, Node, Deno). */
export const CA_BUNDLE_VARIABLES: readonly string[] = [
  "SSL_CERT_FILE",
  "NODE_EXTRA_CA_CERTS",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "DENO_CERT",
];
