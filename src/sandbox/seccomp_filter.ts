/**
 * The seccomp filter every confined process runs under: a classic-BPF program, generated for one architecture
 * and one network kind, that bubblewrap loads (`--seccomp FD`) just before it starts the tool. A second wall
 * under the namespaces: it refuses, with `EPERM`, the kernel calls that escapes and privilege escalations go
 * through (nested namespaces, io_uring, bpf, userfaultfd, perf events, keyrings, ptrace and `process_vm_*`, kexec
 * and modules, mounts, swap, reboot, acct, address-randomisation off, raw/packet/netlink/vsock sockets, every
 * socket but AF_UNIX without network, `TIOCSTI` and `TIOCLINUX`), answers `clone3` with `ENOSYS` (its flags are
 * in memory a filter cannot read, so libc falls back to `clone`, whose flags it can), and kills a process that
 * makes a syscall under another ABI (i386's `int 0x80`, x32). It never kills for a refused call: the program
 * sees `EPERM` and can say so. Everything else is allowed, as a container runtime's default profile does for
 * what it does not name.
 *
 * Arguments are compared on their low 32 bits only: every argument the filter reads is an `int` or `unsigned
 * int` to the kernel (`clone`'s flags are `lower_32_bits`), so a value with garbage in the upper half cannot
 * slip past a 64-bit compare as it did in filters that compared both halves.
 *
 * Not here: the syscall numbers (syscall_tables.ts); where the program is written and how bwrap gets it
 * (seccomp_file.ts, tool_launch.ts); what people and models are told of it (seccomp_notes.ts).
 *
 * @module
 */
import { type SeccompArch, SYSCALL_TABLES, type SyscallName } from "./syscall_tables.ts";

/** What the filter depends on besides the architecture. */
export interface SeccompOptions {
  /**
   * Whether the profile has network (all of it, or hosts through the proxy's bridge on the sandbox's loopback):
   * then AF_INET and AF_INET6 stream, datagram and seqpacket sockets and NETLINK_ROUTE are allowed; without, no
   * socket but AF_UNIX.
   */
  readonly network: boolean;
}

/** The calls refused outright with `EPERM`, in the order the filter tests them (most escapes first). */
export const REFUSED_SYSCALLS: readonly SyscallName[] = [
  "setns",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "bpf",
  "userfaultfd",
  "perf_event_open",
  "keyctl",
  "add_key",
  "request_key",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "pidfd_getfd",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "mount",
  "umount2",
  "pivot_root",
  "move_mount",
  "open_tree",
  "open_tree_attr",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "swapon",
  "swapoff",
  "reboot",
  "acct",
  "open_by_handle_at",
  "lookup_dcookie",
  "quotactl",
  "quotactl_fd",
  "syslog",
  "vhangup",
  "iopl",
  "ioperm",
  "uselib",
  "_sysctl",
];

/** `SECCOMP_RET_*`: what the filter answers. */
export const SECCOMP_RET = {
  killProcess: 0x80000000,
  errno: 0x00050000,
  allow: 0x7fff0000,
} as const;

/** The errno values the filter answers with. */
export const EPERM = 1;
/** `clone3` gets this, so that libc falls back to `clone`. */
export const ENOSYS = 38;

/** `unshare` and `clone` flags that make a namespace (time, mount, cgroup, uts, ipc, user, pid, net). */
export const NAMESPACE_FLAGS = 0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 |
  0x20000000 | 0x40000000;

/**
 * The `personality` values allowed (as Docker's default profile): PER_LINUX, PER_LINUX32, UNAME26 with each, and
 * the query `0xffffffff`; anything else (ADDR_NO_RANDOMIZE above all) is refused.
 */
export const ALLOWED_PERSONAS: readonly number[] = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

/** Address families (`AF_*`) and socket types the socket rules name. */
export const AF = { unix: 1, inet: 2, inet6: 10, netlink: 16 } as const;
/** The socket types an AF_INET/AF_INET6 socket may have with network: stream, datagram, seqpacket (never raw). */
export const INET_TYPES: readonly number[] = [1, 2, 5];
/** `NETLINK_ROUTE`: the only netlink protocol allowed, and only with network (getaddrinfo's AI_ADDRCONFIG). */
export const NETLINK_ROUTE = 0;
/** The terminal ioctls refused: pushing input into a terminal (`TIOCSTI`), the console's `TIOCLINUX`. */
export const REFUSED_IOCTLS: readonly number[] = [0x5412, 0x541c];

// Classic BPF opcodes (linux/filter.h) and the offsets of struct seccomp_data (little-endian on both arches).
const LD_ABS_W = 0x20;
const JEQ = 0x15;
const JGE = 0x35;
const JSET = 0x45;
const AND = 0x54;
const RET = 0x06;
const NR = 0;
const ARCH = 4;
const argLow = (index: number) => 16 + 8 * index;

type Target = string;
type Op =
  | { readonly op: "ld"; readonly k: number }
  | { readonly op: "and"; readonly k: number }
  | { readonly op: "ret"; readonly k: number }
  | {
    readonly op: "jump";
    readonly code: number;
    readonly k: number;
    readonly yes: Target;
    readonly no: Target;
  }
  | { readonly op: "label"; readonly name: string };

/** A tiny assembler: instructions with named jump targets, resolved to the 8-bit offsets classic BPF has. */
function assemble(ops: readonly Op[]): Uint8Array<ArrayBuffer> {
  const labels = new Map<string, number>();
  let at = 0;
  for (const op of ops) {
    if (op.op === "label") labels.set(op.name, at);
    else at++;
  }
  const out = new Uint8Array(at * 8);
  const view = new DataView(out.buffer);
  let pc = 0;
  const offset = (target: Target): number => {
    if (target === "next") return 0;
    const to = labels.get(target);
    if (to === undefined) throw new Error(`seccomp filter: no label ${target}`);
    const jump = to - pc - 1;
    if (jump < 0 || jump > 255) throw new Error(`seccomp filter: jump to ${target} out of range (${jump})`);
    return jump;
  };
  for (const op of ops) {
    if (op.op === "label") continue;
    const code = op.op === "ld" ? LD_ABS_W : op.op === "and" ? AND : op.op === "ret" ? RET : op.code;
    view.setUint16(pc * 8, code, true);
    if (op.op === "jump") {
      view.setUint8(pc * 8 + 2, offset(op.yes));
      view.setUint8(pc * 8 + 3, offset(op.no));
    }
    view.setUint32(pc * 8 + 4, op.k >>> 0, true);
    pc++;
  }
  return out;
}

const ld = (k: number): Op => ({ op: "ld", k });
const ret = (k: number): Op => ({ op: "ret", k });
const label = (name: string): Op => ({ op: "label", name });
const jeq = (k: number, yes: Target, no: Target = "next"): Op => ({ op: "jump", code: JEQ, k, yes, no });

/**
 * The filter for `arch` and a profile's network kind, as the bytes of a `struct sock_filter` array (what
 * bwrap's `--seccomp FD` reads).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seccompFilter } from "./seccomp_filter.ts";
 * const program = seccompFilter("x86_64", { network: false });
 * assert.equal(program.length % 8, 0);
 * // It starts by loading seccomp_data.arch (BPF_LD|BPF_W|BPF_ABS, offset 4).
 * assert.deepEqual([...program.slice(0, 2)], [0x20, 0]);
 * assert.equal(new DataView(program.buffer).getUint32(4, true), 4);
 * ```
 */
export function seccompFilter(arch: SeccompArch, options: SeccompOptions): Uint8Array<ArrayBuffer> {
  const table = SYSCALL_TABLES[arch];
  const nr = (name: SyscallName) => table.numbers[name];
  const ops: Op[] = [
    ld(ARCH),
    jeq(table.auditArch, "next", "kill"),
    ld(NR),
  ];
  if (table.foreignFrom !== undefined) {
    ops.push({ op: "jump", code: JGE, k: table.foreignFrom, yes: "kill", no: "next" });
  }
  const special: [SyscallName, Target][] = [
    ["clone3", "enosys"],
    ["clone", "namespaces"],
    ["unshare", "namespaces"],
    ["socket", "socket"],
    ["socketpair", "socket"],
    ["ioctl", "ioctl"],
    ["personality", "personality"],
  ];
  for (const [name, target] of special) {
    const number = nr(name);
    if (number !== undefined) ops.push(jeq(number, target));
  }
  for (const name of REFUSED_SYSCALLS) {
    const number = nr(name);
    if (number !== undefined) ops.push(jeq(number, "eperm"));
  }
  ops.push(ret(SECCOMP_RET.allow));

  ops.push(
    label("namespaces"),
    ld(argLow(0)),
    { op: "jump", code: JSET, k: NAMESPACE_FLAGS, yes: "eperm", no: "allow" },
  );
  ops.push(label("personality"), ld(argLow(0)));
  for (const persona of ALLOWED_PERSONAS) ops.push(jeq(persona, "allow"));
  ops.push(ret(SECCOMP_RET.errno | EPERM));
  ops.push(label("ioctl"), ld(argLow(1)));
  for (const request of REFUSED_IOCTLS) ops.push(jeq(request, "eperm"));
  ops.push(ret(SECCOMP_RET.allow));

  ops.push(label("socket"), ld(argLow(0)), jeq(AF.unix, "allow"));
  if (options.network) {
    ops.push(
      jeq(AF.inet, "inet"),
      jeq(AF.inet6, "inet"),
      jeq(AF.netlink, "next", "eperm"),
      ld(argLow(2)),
      jeq(NETLINK_ROUTE, "allow", "eperm"),
      label("inet"),
      ld(argLow(1)),
      // SOCK_TYPE_MASK: the flags SOCK_NONBLOCK and SOCK_CLOEXEC sit above it.
      { op: "and", k: 0xf },
    );
    for (const type of INET_TYPES) ops.push(jeq(type, "allow"));
  }
  ops.push(ret(SECCOMP_RET.errno | EPERM));

  ops.push(
    label("allow"),
    ret(SECCOMP_RET.allow),
    label("eperm"),
    ret(SECCOMP_RET.errno | EPERM),
    label("enosys"),
    ret(SECCOMP_RET.errno | ENOSYS),
    label("kill"),
    ret(SECCOMP_RET.killProcess),
  );
  return assemble(ops);
}

/**
 * The architecture the filter is generated for on this machine, or `undefined` where it knows none (then a
 * confined call does not run unless the sandbox mode says so).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { machineArch } from "./seccomp_filter.ts";
 * assert.equal(machineArch("aarch64"), "aarch64");
 * assert.equal(machineArch("riscv64"), undefined);
 * ```
 */
export function machineArch(arch: string = Deno.build.arch): SeccompArch | undefined {
  return arch === "x86_64" || arch === "aarch64" ? arch : undefined;
}
