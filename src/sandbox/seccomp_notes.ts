/**
 * The seccomp filter in words, for the people and models it refuses: a profile's filter in one line (`doctor`
 * and the console show it per profile), and the note a confined call's failure gets when it reads like a
 * refusal of the filter, or like bubblewrap failing to load it.
 *
 * Not here: the filter itself (seccomp_filter.ts).
 *
 * @module
 */

/**
 * What the filter refuses a profile with or without network, in one line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seccompSummary } from "./seccomp_notes.ts";
 * assert.match(seccompSummary(false), /AF_UNIX sockets only/);
 * assert.match(seccompSummary(true), /NETLINK_ROUTE/);
 * ```
 */
export function seccompSummary(network: boolean): string {
  return "seccomp: no namespaces, mounts, io_uring, bpf, ptrace, keyrings, TIOCSTI; " +
    (network ? "no raw, packet, vsock or netlink sockets but NETLINK_ROUTE" : "AF_UNIX sockets only");
}

/**
 * The note for the model when a confined call's failure reads like a refusal of the filter (`EPERM`, "Operation
 * not permitted"), so that it can tell "not allowed here" from "failed", or like bubblewrap's own failure to load
 * it (a kernel without seccomp filters: then nothing of the tool ran); `undefined` when it reads like neither.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { filterRefusalNote } from "./seccomp_notes.ts";
 * assert.match(filterRefusalNote("unshare: unshare failed: Operation not permitted")!, /seccomp filter/);
 * assert.match(filterRefusalNote("bwrap: Unable to set up system call filtering")!, /could not be loaded/);
 * assert.equal(filterRefusalNote("No such file or directory"), undefined);
 * ```
 */
export function filterRefusalNote(failure: string): string | undefined {
  if (/bwrap: .*(system call filtering|seccomp)/i.test(failure)) {
    return "the sandbox's seccomp filter could not be loaded on this machine (bubblewrap said so above), and a " +
      "confined call does not run without it: nothing of the tool ran; a person can run it with --sandbox off";
  }
  if (!/Operation not permitted|\bEPERM\b/.test(failure)) return undefined;
  return "the tool was refused a kernel call (Operation not permitted): confined tools run under toolgate's " +
    "seccomp filter, which refuses nested namespaces, mounts, io_uring, bpf, ptrace, keyrings, raw, packet, " +
    "netlink and vsock sockets (and every socket but AF_UNIX without network) and terminal injection; such a " +
    "call cannot succeed here, and a person can widen the profile or run the tool with --sandbox off";
}
