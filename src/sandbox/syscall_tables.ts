/**
 * The syscall numbers the seccomp filter names, per architecture the filter knows (x86_64 and aarch64), with the
 * architecture's audit number (what the kernel reports in `seccomp_data.arch`, checked first). Numbers are the
 * kernel's own (`arch/x86/entry/syscalls/syscall_64.tbl`, `include/uapi/asm-generic/unistd.h`); a call an
 * architecture lacks (x86's `iopl`, `ioperm`, `uselib`, `_sysctl`) is absent from its table.
 *
 * Not here: what the filter does with each call (seccomp_filter.ts).
 *
 * @module
 */

/** The architectures the filter is generated for. */
export type SeccompArch = "x86_64" | "aarch64";

/** The syscalls the filter treats specially: refused outright, or decided by an argument. */
export type SyscallName =
  | "unshare"
  | "clone"
  | "clone3"
  | "setns"
  | "io_uring_setup"
  | "io_uring_enter"
  | "io_uring_register"
  | "bpf"
  | "userfaultfd"
  | "perf_event_open"
  | "keyctl"
  | "add_key"
  | "request_key"
  | "ptrace"
  | "process_vm_readv"
  | "process_vm_writev"
  | "pidfd_getfd"
  | "kexec_load"
  | "kexec_file_load"
  | "init_module"
  | "finit_module"
  | "delete_module"
  | "mount"
  | "umount2"
  | "pivot_root"
  | "move_mount"
  | "open_tree"
  | "open_tree_attr"
  | "fsopen"
  | "fsconfig"
  | "fsmount"
  | "fspick"
  | "mount_setattr"
  | "swapon"
  | "swapoff"
  | "reboot"
  | "acct"
  | "open_by_handle_at"
  | "lookup_dcookie"
  | "quotactl"
  | "quotactl_fd"
  | "syslog"
  | "vhangup"
  | "iopl"
  | "ioperm"
  | "uselib"
  | "_sysctl"
  | "personality"
  | "socket"
  | "socketpair"
  | "ioctl";

/** One architecture's table: its audit number, and the number of each call it has. */
export interface SyscallTable {
  /** `AUDIT_ARCH_*`: a syscall made under any other ABI (i386's `int 0x80` on x86_64) kills the process. */
  readonly auditArch: number;
  /**
   * Syscall numbers at or above this belong to another ABI sharing the audit number (x86_64's x32, whose
   * `__X32_SYSCALL_BIT` is 0x40000000): killed too.
   */
  readonly foreignFrom?: number;
  readonly numbers: Readonly<Partial<Record<SyscallName, number>>>;
}

/** The calls added after 2019 share one number on every architecture (asm-generic's unified numbering). */
const UNIFIED: Readonly<Partial<Record<SyscallName, number>>> = {
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  pidfd_getfd: 438,
  mount_setattr: 442,
  quotactl_fd: 443,
  open_tree_attr: 467,
};

/**
 * The syscall tables of the architectures the seccomp filter knows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SYSCALL_TABLES } from "./syscall_tables.ts";
 * assert.equal(SYSCALL_TABLES.x86_64.numbers.ptrace, 101);
 * assert.equal(SYSCALL_TABLES.aarch64.numbers.ptrace, 117);
 * assert.equal(SYSCALL_TABLES.aarch64.numbers.iopl, undefined);
 * ```
 */
export const SYSCALL_TABLES: Readonly<Record<SeccompArch, SyscallTable>> = {
  x86_64: {
    auditArch: 0xc000003e,
    foreignFrom: 0x40000000,
    numbers: {
      ...UNIFIED,
      ioctl: 16,
      socket: 41,
      socketpair: 53,
      clone: 56,
      ptrace: 101,
      syslog: 103,
      uselib: 134,
      personality: 135,
      vhangup: 153,
      pivot_root: 155,
      _sysctl: 156,
      acct: 163,
      mount: 165,
      umount2: 166,
      swapon: 167,
      swapoff: 168,
      reboot: 169,
      iopl: 172,
      ioperm: 173,
      init_module: 175,
      delete_module: 176,
      quotactl: 179,
      lookup_dcookie: 212,
      kexec_load: 246,
      add_key: 248,
      request_key: 249,
      keyctl: 250,
      unshare: 272,
      perf_event_open: 298,
      open_by_handle_at: 304,
      setns: 308,
      process_vm_readv: 310,
      process_vm_writev: 311,
      finit_module: 313,
      kexec_file_load: 320,
      bpf: 321,
      userfaultfd: 323,
    },
  },
  aarch64: {
    auditArch: 0xc00000b7,
    numbers: {
      ...UNIFIED,
      lookup_dcookie: 18,
      ioctl: 29,
      umount2: 39,
      mount: 40,
      pivot_root: 41,
      vhangup: 58,
      quotactl: 60,
      acct: 89,
      personality: 92,
      unshare: 97,
      kexec_load: 104,
      init_module: 105,
      delete_module: 106,
      syslog: 116,
      ptrace: 117,
      reboot: 142,
      socket: 198,
      socketpair: 199,
      add_key: 217,
      request_key: 218,
      keyctl: 219,
      clone: 220,
      swapon: 224,
      swapoff: 225,
      perf_event_open: 241,
      open_by_handle_at: 265,
      setns: 268,
      process_vm_readv: 270,
      process_vm_writev: 271,
      finit_module: 273,
      bpf: 280,
      userfaultfd: 282,
      kexec_file_load: 294,
    },
  },
};
