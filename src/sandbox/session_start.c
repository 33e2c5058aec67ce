/*
 * session-start: starts an unconfined tool of toolgate's in a session of its own and inside its call's cgroups,
 * in one exec. The program it replaces is setsid(1) followed by a shell that made, lifted and joined the cgroups
 * (two execs before the tool's own, a third of a call's time under load). Built by `deno task install` where a
 * C compiler is found (src/build/native.ts), started by toolgate only (src/sandbox/session_start.ts); the shell
 * stands in where it is not built.
 *
 *   session-start [STEP]... -- PROGRAM [ARG]...
 *
 * First of all, every descriptor but stdin, stdout and stderr is closed: what toolgate's own parent left open
 * without close-on-exec (a host's pipe, a folder) reaches no tool, and no sandbox (bwrap hands on what it is given:
 * a folder's descriptor would open paths outside it). Inside a sandbox that includes the descriptor this program
 * was started from. Steps, done in order after setsid() (but -r, -g and -f, in that order after the others):
 *   -d DIR          make the folder DIR unless it is there (a cgroup slot's first call)
 *   -w FILE VALUE   write VALUE to FILE (a limit lifted: an earlier call of the slot may have set one)
 *   -o FILE VALUE   the same, where the file is there at all (memory.swap.max, absent without swap accounting)
 *   -j FILE         write this process's pid to FILE: join the cgroup whose cgroup.procs it is
 *   -g              wait at the call's gate: read one byte of stdin (the tool's stdin starts right after it); an end
 *                   of stdin, or any byte but a newline, exits 125 having run nothing (src/sandbox/gate.ts)
 *   -k              keep toolgate's session: no setsid() (a confined call: bwrap makes the tool's session)
 *   -r LIMIT VALUE  set the rlimit LIMIT (cpu, fsize or data), soft and hard, to VALUE (seconds or bytes), after
 *                   the cgroups and before the gate; one that cannot be set exits 125 ("... the cgroup rlimits")
 *   -f FD FILE      open FILE to read as descriptor FD, kept across the exec (bwrap's seccomp program), after the
 *                   gate; a file that cannot be opened exits 125 having run nothing
 *   -p              the program gets PWD (the working folder) unless its environment has one: what the shell in
 *                   front of a confined call's bwrap exported, and its tools always had
 *   -s              stay: run PROGRAM as a child, not in this process's place, and exit only once every process
 *                   started under it is gone. As a subreaper (PR_SET_CHILD_SUBREAPER), this process inherits
 *                   whatever is orphaned below it, so its exit is the end of the whole tree: a confined call's
 *                   bwrap exits as soon as its tool has, while its pid namespace is still being ended (its init is
 *                   killed only as bwrap's death reaches it), and the namespace's init is then this process's child.
 *                   It ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT (PROGRAM gets them as it would: they reach its
 *                   process group or its cgroup), keeps no descriptor, and ends as PROGRAM did: its exit code, or
 *                   the signal that killed it, raised on itself. So its own death by any other signal (SIGKILL) is
 *                   the one end that says nothing of the tree below it. It dies with its parent (SIGKILL), as
 *                   bwrap's --die-with-parent did when toolgate was bwrap's parent: a toolgate killed with SIGKILL
 *                   takes it, and so bwrap and the sandbox, with it; a parent gone before it asked runs nothing.
 *   -x              with -s: once PROGRAM has exited, kill (SIGKILL) whatever is left below, round after round until
 *                   nothing is (each kill makes the killed process's children this subreaper's). An unconfined
 *                   call has no namespace to end its tree: a process that left its session (setsid) is ended so,
 *                   with a cgroup or without one. Found through /proc/self/task/PID/children, or where the kernel
 *                   has no such file, through each /proc/PID/stat.
 * The folders of -d are made only when another step fails (a slot's folders are there at every call but its
 * first: a mkdir that finds its folder costs a path's walk in the cgroup filesystem at every call). A failed step
 * starts the steps over, the folders made first, twice at most (an older toolgate's sweep may remove an idle slot
 * between two of them); a last failure exits 125 with "toolgate: cannot set up the cgroup DIR" (the shell's
 * words). Then the rlimits, the gate and the files; then (with -s in a child) PROGRAM is executed with the environment as given (PATH searched as execvp(3) does); where it
 * cannot be, the exit is 126 (127: not found) with "session-start: failed to execute PROGRAM: REASON", as
 * setsid(1) says it. Nothing here reads the environment (but PATH), follows a link when it writes, or keeps a
 * descriptor open across exec.
 *
 * Built freestanding where it can be (x86-64 and AArch64 Linux: `-DSESSION_START_FREESTANDING -nostdlib`): its
 * own entry and system calls, no C library. A C library's start is most of such a small program's own time
 * (a static glibc's start asks the processor its features and caches, each question a trap out of a virtual
 * machine, and reads /proc/self/exe's link); this program's work is a dozen system calls. Elsewhere it is built
 * against the C library, the same source through the same few calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#if defined(SESSION_START_FREESTANDING) && (defined(__x86_64__) || defined(__aarch64__))

/* The system calls, each returning its result or -errno. */
#if defined(__x86_64__)
static long call6(long n, long a, long b, long c, long d) {
  long result;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(result) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return result;
}
/* The entry: the stack holds argc, then argv, then the environment. */
__asm__(".text\n.global _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n"
        "  call start_c\n  hlt\n");
#else
static long call6(long n, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
__asm__(".text\n.global _start\n_start:\n  mov x29, #0\n  mov x30, #0\n  mov x0, sp\n  and sp, x0, #-16\n"
        "  bl start_c\n");
#endif

static long sys_openat(const char *path, int flags) { return call6(SYS_openat, AT_FDCWD, (long)path, flags, 0); }
static long sys_write(int fd, const void *bytes, unsigned long length) { return call6(SYS_write, fd, (long)bytes, length, 0); }
static long sys_read(int fd, void *bytes, unsigned long length) { return call6(SYS_read, fd, (long)bytes, length, 0); }
static long sys_close(int fd) { return call6(SYS_close, fd, 0, 0, 0); }
static long sys_mkdir(const char *path, int mode) { return call6(SYS_mkdirat, AT_FDCWD, (long)path, mode, 0); }
static long sys_setsid(void) { return call6(SYS_setsid, 0, 0, 0, 0); }
static long sys_getpid(void) { return call6(SYS_getpid, 0, 0, 0, 0); }
static long sys_execve(const char *path, char **argv, char **envp) {
  return call6(SYS_execve, (long)path, (long)argv, (long)envp, 0);
}
static long sys_setrlimit(int resource, unsigned long long value) {
  unsigned long long limit[2] = {value, value};
  return call6(SYS_prlimit64, 0, resource, (long)limit, 0);
}
static long sys_dup3(int from, int to) { return call6(SYS_dup3, from, to, 0, 0); }
static long sys_getcwd(char *bytes, unsigned long size) { return call6(SYS_getcwd, (long)bytes, size, 0, 0); }
static long sys_close_range(int first) { return call6(436 /* close_range */, first, ~0U, 0, 0); }
static void sys_exit(int code) {
  for (;;) call6(SYS_exit_group, code, 0, 0, 0);
}
/* A child, as fork(2) makes one (no shared memory: it goes on with its own copy of this stack). */
static long sys_fork(void) { return call6(SYS_clone, 17 /* SIGCHLD */, 0, 0, 0); }
static long sys_wait_any(int *status) { return call6(SYS_wait4, -1, (long)status, 0x40000000 /* __WALL */, 0); }
static long sys_subreaper(void) { return call6(SYS_prctl, 36 /* PR_SET_CHILD_SUBREAPER */, 1, 0, 0); }
static long sys_die_with_parent(void) { return call6(SYS_prctl, 1 /* PR_SET_PDEATHSIG */, 9 /* SIGKILL */, 0, 0); }
static long sys_getppid(void) { return call6(SYS_getppid, 0, 0, 0, 0); }
static long sys_kill(int pid, int number) { return call6(SYS_kill, pid, number, 0, 0); }
static long sys_getdents(int fd, void *bytes, unsigned long size) { return call6(SYS_getdents64, fd, (long)bytes, size, 0); }
static long sys_kill_self(int number) { return call6(SYS_kill, sys_getpid(), number, 0, 0); }
/* SIG_DFL (0) or SIG_IGN (1) for signal `number`: no handler, so no restorer (the kernel's sigaction, 8-byte mask). */
static long sys_disposition(int number, long handler) {
  long action[4] = {handler, 0, 0, 0};
  return call6(SYS_rt_sigaction, number, (long)action, 0, 8);
}

/* What a compiler may call for a copy or a fill of its own. */
void *memcpy(void *to, const void *from, unsigned long n) {
  char *t = to;
  const char *f = from;
  while (n--) *t++ = *f++;
  return to;
}
void *memset(void *to, int byte, unsigned long n) {
  char *t = to;
  while (n--) *t++ = (char)byte;
  return to;
}

#else

#include <unistd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
static long result_of(long result) { return result < 0 ? -errno : result; }
static long sys_openat(const char *path, int flags) { return result_of(open(path, flags)); }
static long sys_write(int fd, const void *bytes, unsigned long length) { return result_of(write(fd, bytes, length)); }
static long sys_read(int fd, void *bytes, unsigned long length) { return result_of(read(fd, bytes, length)); }
static long sys_close(int fd) { return result_of(close(fd)); }
static long sys_mkdir(const char *path, int mode) { return result_of(mkdir(path, mode)); }
static long sys_setsid(void) { return result_of(setsid()); }
static long sys_getpid(void) { return getpid(); }
static long sys_execve(const char *path, char **argv, char **envp) { return result_of(execve(path, argv, envp)); }
static long sys_setrlimit(int resource, unsigned long long value) {
  struct rlimit limit = {(rlim_t)value, (rlim_t)value};
  return result_of(setrlimit(resource, &limit));
}
static long sys_dup3(int from, int to) { return result_of(dup3(from, to, 0)); }
static long sys_getcwd(char *bytes, unsigned long size) { return getcwd(bytes, size) == 0 ? -errno : 0; }
static long sys_close_range(int first) { return result_of(syscall(436 /* close_range */, first, ~0U, 0)); }
static void sys_exit(int code) { _exit(code); }
static long sys_fork(void) { return result_of(fork()); }
static long sys_wait_any(int *status) { return result_of(waitpid(-1, status, __WALL)); }
static long sys_subreaper(void) { return result_of(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)); }
static long sys_die_with_parent(void) { return result_of(prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)); }
static long sys_getppid(void) { return getppid(); }
static long sys_kill(int pid, int number) { return result_of(kill(pid, number)); }
static long sys_getdents(int fd, void *bytes, unsigned long size) {
  return result_of(syscall(SYS_getdents64, fd, bytes, size));
}
static long sys_kill_self(int number) { return result_of(kill(getpid(), number)); }
static long sys_disposition(int number, long handler) {
  return signal(number, handler == 0 ? SIG_DFL : SIG_IGN) == SIG_ERR ? -EINVAL : 0;
}

#endif

static unsigned long length_of(const char *text) {
  unsigned long n = 0;
  while (text[n] != 0) n++;
  return n;
}

static int same(const char *a, const char *b) {
  while (*a != 0 && *a == *b) a++, b++;
  return *a == *b;
}

/* Writes the pieces to stderr, as one line's parts (a short write to a pipe is not retried: it is a message). */
static void say(const char *const *parts) {
  char line[4096];
  unsigned long n = 0;
  for (; *parts != 0; parts++) {
    for (const char *c = *parts; *c != 0 && n < sizeof line; c++) line[n++] = *c;
  }
  sys_write(2, line, n);
}

/* The C library's words for the errors an exec reports. */
static const char *reason(long error) {
  switch (error) {
    case ENOENT: return "No such file or directory";
    case EACCES: return "Permission denied";
    case ENOEXEC: return "Exec format error";
    case ENOTDIR: return "Not a directory";
    case ELOOP: return "Too many levels of symbolic links";
    case ENAMETOOLONG: return "File name too long";
    case E2BIG: return "Argument list too long";
    case ETXTBSY: return "Text file busy";
    case ENOMEM: return "Cannot allocate memory";
    case EPERM: return "Operation not permitted";
    case EISDIR: return "Is a directory";
    case EIO: return "Input/output error";
    case EINVAL: return "Invalid argument";
    default: return "Unknown error";
  }
}

/* Writes all of `value` to `file`; 0, or -errno. */
static long write_file(const char *file, const char *value) {
  long fd = sys_openat(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return fd;
  unsigned long length = length_of(value);
  long written = sys_write((int)fd, value, length);
  sys_close((int)fd);
  if (written < 0) return written;
  return written == (long)length ? 0 : -EIO;
}

/* Prints the folder of `path` (a file's, or the folder itself for -d) in the shell's words, and exits 125. */
static void cannot_set_up(const char *path, int is_dir) {
  char folder[4096];
  unsigned long n = length_of(path), cut = n;
  if (!is_dir) {
    while (cut > 0 && path[cut - 1] != '/') cut--;
    cut = cut > 0 ? cut - 1 : n;
  }
  if (cut >= sizeof folder) cut = sizeof folder - 1;
  for (unsigned long i = 0; i < cut; i++) folder[i] = path[i];
  folder[cut] = 0;
  const char *parts[] = {"toolgate: cannot set up the cgroup ", folder, "\n", 0};
  say(parts);
  sys_exit(125);
}

/*
 * Runs the steps argv[1..end), the folders' (-d) only with `make_dirs`; on failure, where it failed (and whether it
 * was a folder step) in *at.
 */
static long steps(char **argv, int end, const char *pid, int make_dirs, const char **at, int *at_dir) {
  for (int i = 1; i < end; i++) {
    const char *step = argv[i];
    if (same(step, "-d")) {
      long made = make_dirs ? sys_mkdir(argv[i + 1], 0755) : 0;
      if (made != 0 && made != -EEXIST) return *at = argv[i + 1], *at_dir = 1, -1;
      i += 1;
    } else if (same(step, "-w") || same(step, "-o")) {
      long wrote = write_file(argv[i + 1], argv[i + 2]);
      if (wrote != 0 && !(step[1] == 'o' && wrote == -ENOENT)) return *at = argv[i + 1], *at_dir = 0, -1;
      i += 2;
    } else if (same(step, "-j")) {
      if (write_file(argv[i + 1], pid) != 0) return *at = argv[i + 1], *at_dir = 0, -1;
      i += 1;
    }
  }
  return 0;
}

/* Waits for the gate's newline on stdin, one byte only; exits 125 on anything else, running nothing. */
static void wait_at_gate(void) {
  char byte = 0;
  long got;
  do got = sys_read(0, &byte, 1);
  while (got == -EINTR);
  if (got != 1 || byte != '\n') sys_exit(125);
}

/* The value of `name` in the environment, or 0. */
static const char *variable(char **envp, const char *name) {
  unsigned long n = length_of(name);
  for (; *envp != 0; envp++) {
    unsigned long i = 0;
    while (i < n && (*envp)[i] == name[i]) i++;
    if (i == n && (*envp)[n] == '=') return *envp + n + 1;
  }
  return 0;
}

/* execve, and where the file is no program the kernel knows (no #! line), the shell runs it, as execvp(3) does. */
static long exec_file(const char *path, char **argv, char **envp) {
  long error = sys_execve(path, argv, envp);
  if (error != -ENOEXEC) return error;
  char *shell[256];
  int n = 0;
  shell[n++] = "/bin/sh";
  shell[n++] = (char *)path;
  for (char **arg = argv + 1; *arg != 0 && n < 255; arg++) shell[n++] = *arg;
  shell[n] = 0;
  sys_execve("/bin/sh", shell, envp);
  return error;
}

/* Executes argv[0] as execvp(3) does: a name with a slash as it is, any other looked for along PATH. */
static long exec_program(char **argv, char **envp) {
  const char *file = argv[0];
  for (const char *c = file; *c != 0; c++) {
    if (*c == '/') return exec_file(file, argv, envp);
  }
  if (*file == 0) return -ENOENT;
  const char *path = variable(envp, "PATH");
  if (path == 0) path = "/bin:/usr/bin";
  unsigned long file_length = length_of(file);
  long error = -ENOENT;
  int denied = 0;
  for (const char *dir = path;; dir++) {
    const char *end = dir;
    while (*end != 0 && *end != ':') end++;
    char full[4096];
    unsigned long n = (unsigned long)(end - dir);
    if (n + 1 + file_length < sizeof full) {
      for (unsigned long i = 0; i < n; i++) full[i] = dir[i];
      if (n > 0) full[n++] = '/';
      for (unsigned long i = 0; i <= file_length; i++) full[n + i] = file[i];
      error = exec_file(full, argv, envp);
      if (error == -EACCES) denied = 1;
      else if (error != -ENOENT && error != -ENOTDIR && error != -ESTALE && error != -ENODEV && error != -ETIMEDOUT) {
        return error;
      }
    }
    if (*end == 0) break;
    dir = end;
  }
  return denied ? -EACCES : error;
}

/* A decimal number, or -1 when `text` is none. */
static long long number_of(const char *text) {
  long long value = 0;
  if (*text == 0) return -1;
  for (; *text != 0; text++) {
    if (*text < '0' || *text > '9' || value > 922337203685477579LL) return -1;
    value = value * 10 + (*text - '0');
  }
  return value;
}

/* Sets the rlimit `name` (cpu, fsize or data) to `value`, soft and hard; -1 when it cannot be. */
static long set_limit(const char *name, const char *value) {
  long long amount = number_of(value);
  int resource = same(name, "cpu") ? RLIMIT_CPU : same(name, "fsize") ? RLIMIT_FSIZE
    : same(name, "data") ? RLIMIT_DATA : -1;
  if (resource < 0 || amount < 0) return -1;
  return sys_setrlimit(resource, (unsigned long long)amount) == 0 ? 0 : -1;
}

/* Opens `file` to read as descriptor `fd`, left open across the exec; -1 when it cannot be. */
static long open_as(const char *fd_text, const char *file) {
  long long fd = number_of(fd_text);
  if (fd < 3 || fd > 1023) return -1;
  long opened = sys_openat(file, O_RDONLY);
  if (opened < 0) return -1;
  if (opened == fd) return 0;
  long moved = sys_dup3((int)opened, (int)fd);
  sys_close((int)opened);
  return moved < 0 ? -1 : 0;
}

/* Executes the program of `argv`; where it cannot be, says why and gives the exit code (127: not found, else 126). */
static int run_program(char **argv, char **envp) {
  long error = exec_program(argv, envp);
  const char *parts[] = {"session-start: failed to execute ", argv[0], ": ", reason(-error), "\n", 0};
  say(parts);
  return error == -ENOENT ? 127 : 126;
}

/* Writes the decimal `value` into `text` at `n`, ended by a 0; the length after it. */
static unsigned long put_number(char *text, unsigned long n, long value) {
  char digits[24];
  int count = 0;
  do digits[count++] = (char)('0' + value % 10);
  while ((value /= 10) > 0);
  while (count > 0) text[n++] = digits[--count];
  text[n] = 0;
  return n;
}

/* Appends `piece` to `text` at `n`, ended by a 0; the length after it. */
static unsigned long put_text(char *text, unsigned long n, const char *piece) {
  while (*piece != 0) text[n++] = *piece++;
  text[n] = 0;
  return n;
}

/* Reads up to `size` - 1 bytes of `path` into `bytes`, ended by a 0: how many, or -1 when it cannot be opened. */
static long read_file(const char *path, char *bytes, unsigned long size) {
  long fd = sys_openat(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  unsigned long n = 0;
  while (n + 1 < size) {
    long got = sys_read((int)fd, bytes + n, size - 1 - n);
    if (got == -EINTR) continue;
    if (got <= 0) break;
    n += (unsigned long)got;
  }
  sys_close((int)fd);
  bytes[n] = 0;
  return (long)n;
}

/*
 * Kills (SIGKILL) every child of this process, `self`; how many it found, or -1 when /proc cannot say. A child
 * cannot be another process meanwhile: it stays this process's, dead or alive, until this process reaps it.
 */
static long kill_children(long self) {
  static char list[65536];
  char path[64];
  put_text(path, put_number(path, put_text(path, 0, "/proc/self/task/"), self), "/children");
  long n = read_file(path, list, sizeof list);
  long found = 0;
  if (n >= 0) {
    // A list cut short by the buffer: its last number may be cut too, and is left for the next round.
    if (n == (long)sizeof list - 1) {
      while (n > 0 && list[n - 1] != ' ') n--;
    }
    long pid = 0;
    for (long i = 0; i <= n; i++) {
      char c = i < n ? list[i] : ' ';
      if (c >= '0' && c <= '9') {
        pid = pid * 10 + (c - '0');
      } else {
        if (pid > 0) sys_kill((int)pid, 9), found++;
        pid = 0;
      }
    }
    return found;
  }
  // No such file (a kernel without CONFIG_PROC_CHILDREN): each process's parent, from its /proc/PID/stat.
  long dir = sys_openat("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  static char entries[8192];
  for (;;) {
    long got = sys_getdents((int)dir, entries, sizeof entries);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      // struct linux_dirent64: inode (8 bytes), offset (8), record length (2), type (1), then the name.
      unsigned short length = (unsigned short)((unsigned char)entries[at + 16] |
        ((unsigned char)entries[at + 17] << 8));
      const char *name = entries + at + 19;
      at += length;
      long pid = 0;
      const char *c = name;
      while (*c >= '0' && *c <= '9') pid = pid * 10 + (*c++ - '0');
      if (*c != 0 || pid <= 0) continue;
      char stat[512];
      put_text(stat, put_number(stat, put_text(stat, 0, "/proc/"), pid), "/stat");
      static char line[1024];
      long read = read_file(stat, line, sizeof line);
      if (read <= 0) continue;
      // "PID (NAME) STATE PPID ...": the name may hold spaces and parentheses; the last ')' ends it.
      long close_at = read - 1;
      while (close_at > 0 && line[close_at] != ')') close_at--;
      long i = close_at + 4;
      long parent = 0;
      while (i < read && line[i] >= '0' && line[i] <= '9') parent = parent * 10 + (line[i++] - '0');
      if (close_at > 0 && parent == self) sys_kill((int)pid, 9), found++;
    }
  }
  sys_close((int)dir);
  return found;
}

/* The signals the process that stays (-s) ignores: they reach the program through its process group or cgroup. */
static const int PASSED_ON[] = {1 /* SIGHUP */, 2 /* SIGINT */, 3 /* SIGQUIT */, 15 /* SIGTERM */};

/*
 * -s: runs the program of `argv` as a child and waits, as a subreaper, until nothing started under it is left;
 * then ends as the program did (its code, or its signal raised here).
 */
static int stay(char **argv, char **envp, int kill_rest) {
  const int count = sizeof PASSED_ON / sizeof PASSED_ON[0];
  long parent = sys_getppid();
  if (sys_die_with_parent() != 0 || sys_getppid() != parent) return 125;
  if (sys_subreaper() != 0) {
    const char *parts[] = {"session-start: cannot become a subreaper\n", 0};
    say(parts);
    return 125;
  }
  for (int i = 0; i < count; i++) sys_disposition(PASSED_ON[i], 1);
  long child = sys_fork();
  if (child == 0) {
    for (int i = 0; i < count; i++) sys_disposition(PASSED_ON[i], 0);
    sys_exit(run_program(argv, envp));
  }
  if (child < 0) {
    const char *parts[] = {"session-start: failed to execute ", argv[0], ": ", reason(-child), "\n", 0};
    say(parts);
    return 126;
  }
  // Nothing is held here: the program's pipes close when its last holder below ends, as they did without this.
  if (sys_close_range(0) != 0) {
    for (int fd = 0; fd < 1024; fd++) sys_close(fd);
  }
  int status = 0, exited = 0;
  long self = sys_getpid();
  for (;;) {
    // -x: once the program has exited, what is left below is killed before each wait (where /proc cannot say
    // what is left, nothing more is waited for).
    if (exited && kill_rest && kill_children(self) < 0) break;
    int reaped_status = 0;
    long reaped = sys_wait_any(&reaped_status);
    if (reaped == -EINTR) continue;
    // No child is left (ECHILD): the tree below is gone whole.
    if (reaped < 0) break;
    if (reaped == child) status = reaped_status, exited = 1;
  }
  if ((status & 0x7f) == 0) return (status >> 8) & 0xff;
  int number = status & 0x7f;
  sys_disposition(number, 0);
  sys_kill_self(number);
  return 128 + number;
}

static int start(int argc, char **argv, char **envp) {
  // The steps are checked whole before any is done: a malformed line is toolgate's bug, and runs nothing.
  int end = 1;
  while (end < argc && !same(argv[end], "--")) {
    const char *step = argv[end];
    int operands = same(step, "-w") || same(step, "-o") || same(step, "-r") || same(step, "-f") ? 2
      : same(step, "-d") || same(step, "-j") ? 1
      : same(step, "-g") || same(step, "-k") || same(step, "-p") || same(step, "-s") || same(step, "-x") ? 0
      : -1;
    if (operands < 0 || end + operands >= argc) {
      const char *parts[] = {"session-start: bad step ", step, "\n", 0};
      say(parts);
      return 125;
    }
    end += 1 + operands;
  }
  if (end + 1 >= argc) {
    const char *parts[] = {
      "usage: session-start [-d DIR | -w FILE VALUE | -o FILE VALUE | -j FILE | -r LIMIT VALUE | -g | -k |",
      " -f FD FILE | -p | -s | -x]... -- PROGRAM [ARG]...\n", 0};
    say(parts);
    return 125;
  }
  // Nothing but stdin, stdout and stderr is handed on (close_range(2) since Linux 5.9, else one by one).
  if (sys_close_range(3) != 0) {
    for (int fd = 3; fd < 1024; fd++) sys_close(fd);
  }
  // A session of its own, so a process group of its own: the tool's `kill 0` reaches its own processes only, and
  // a terminal toolgate has is not the tool's. It never fails here: a spawned child leads no group yet. Not for a
  // confined call (-k), whose bwrap makes the tool's session and stays in toolgate's group, as it always did.
  int keep = 0;
  for (int i = 1; i < end; i++) keep |= same(argv[i], "-k");
  if (!keep) sys_setsid();
  char pid[24], digits[24];
  int n = 0;
  for (long value = sys_getpid(); value > 0 || n == 0; value /= 10) digits[n++] = (char)('0' + value % 10);
  for (int i = 0; i < n; i++) pid[i] = digits[n - 1 - i];
  pid[n] = 0;
  const char *at = "";
  int at_dir = 0;
  if (steps(argv, end, pid, 0, &at, &at_dir) != 0 && steps(argv, end, pid, 1, &at, &at_dir) != 0 &&
      steps(argv, end, pid, 1, &at, &at_dir) != 0) {
    cannot_set_up(at, at_dir);
  }
  // The rlimits, inherited by everything the program starts (after the cgroups, as the cgroup's shell sets them).
  for (int i = 1; i < end; i++) {
    if (same(argv[i], "-r") && set_limit(argv[i + 1], argv[i + 2]) != 0) {
      const char *parts[] = {"toolgate: cannot set up the cgroup rlimits\n", 0};
      say(parts);
      return 125;
    }
  }
  // The gate comes next: the session and the cgroups are made, and the tool waits only for its go.
  for (int i = 1; i < end; i++) {
    if (same(argv[i], "-g")) wait_at_gate();
  }
  // The files the program reads from a descriptor, opened last, as the seccomp shell opened bwrap's.
  for (int i = 1; i < end; i++) {
    if (same(argv[i], "-f") && open_as(argv[i + 1], argv[i + 2]) != 0) {
      const char *parts[] = {"session-start: cannot open ", argv[i + 2], "\n", 0};
      say(parts);
      return 125;
    }
  }
  // PWD, where asked for and the environment has none: the environment's entries, then it.
  char pwd[4100] = "PWD=";
  char *with_pwd[1024];
  int wants_pwd = 0;
  for (int i = 1; i < end; i++) wants_pwd |= same(argv[i], "-p");
  if (wants_pwd && variable(envp, "PWD") == 0 && sys_getcwd(pwd + 4, sizeof pwd - 4) >= 0) {
    int n = 0;
    while (envp[n] != 0 && n < 1022) with_pwd[n] = envp[n], n++;
    if (envp[n] == 0) {
      with_pwd[n] = pwd;
      with_pwd[n + 1] = 0;
      envp = with_pwd;
    }
  }
  int stays = 0, kill_rest = 0;
  for (int i = 1; i < end; i++) stays |= same(argv[i], "-s"), kill_rest |= same(argv[i], "-x");
  if (stays) return stay(argv + end + 1, envp, kill_rest);
  return run_program(argv + end + 1, envp);
}

#if defined(SESSION_START_FREESTANDING) && (defined(__x86_64__) || defined(__aarch64__))
__attribute__((used)) void start_c(long *stack) {
  int argc = (int)stack[0];
  char **argv = (char **)(stack + 1);
  sys_exit(start(argc, argv, argv + argc + 1));
}
#else
extern char **environ;
int main(int argc, char **argv) {
  return start(argc, argv, environ);
}
#endif
