/**
 * An audit record of a plain finished call, for the tests that write the audit log themselves (in-process, or as
 * a process of their own in tests/fixtures/audit_writer.ts).
 *
 * @module
 */
import type { AuditRecord } from "../src/state/audit_log.ts";

/**
 * A call of `t` that ended at once and well (exit 0, 1 ms, nothing written, no argv), `fields` over it.
 *
 * @example
 * ```ts
 * import { auditRecord } from "./audit_record.ts";
 * auditRecord({ tool: "t1" }).outcome; // "ok"
 * ```
 */
export function auditRecord(fields: Partial<AuditRecord> = {}): AuditRecord {
  return {
    ts: "2026-01-01T00:00:00.000Z",
    tool: "t",
    argv: null,
    cwd: "/",
    exit: 0,
    signal: null,
    ms: 1,
    stdoutBytes: 0,
    stderrBytes: 0,
    truncated: false,
    envKeys: [],
    argsBytes: 2,
    argsHmac: null,
    outcome: "ok",
    ...fields,
  };
}
