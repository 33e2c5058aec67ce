/*
 * session-start: starts an unconfined tool of toolgate's in a session of its own and inside its call's cgroups,
 * in one exec. The program it replaces is setsid(1) followed by a shell that made, lifted and joined the cgroups
 * (two execs before the tool's own, a third of a call's time under load). Built by `deno task install` where a
 * C compiler is found (src/build/native.ts), started by toolgate only (src/sandbox/session_start.ts); the shell
 * stands in where it is not built.
 *
 *   session-start [STEP]... -- PROGRAM [ARG]...
 *
 * Steps, done in order after setsid():
 *   -d DIR          make the folder DIR unless it is there (a cgroup slot's first call)
 *   -w FILE VALUE   write VALUE to FILE (a limit lifted: an earlier call of the slot may have set one)
 *   -o FILE VALUE   the same, where the file is there at all (memory.swap.max, absent without swap accounting)
 *   -j FILE         write this process's pid to FILE: join the cgroup whose cgroup.procs it is
 *   -g              wait at the call's gate: read one byte of stdin (the tool's stdin starts right after it); an end
 *                   of stdin, or any byte but a newline, exits 125 having run nothing (src/sandbox/gate.ts)
 * A failed step starts the steps over once (an older toolgate's sweep may remove an idle slot between two of
 * them); a second failure exits 125 with "toolgate: cannot set up the cgroup DIR" (the shell's words). Then
 * PROGRAM is executed with the environment as given (PATH searched as execvp(3) does); where it cannot be, the
 * exit is 126 (127: not found) with "session-start: failed to execute PROGRAM: REASON", as setsid(1) says it.
 * Nothing here reads the environment (but execvp(3) the PATH), follows a link when it writes, or keeps a
 * descriptor open across exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes all of `value` to `file`; 0, or -1 with errno set. */
static int write_file(const char *file, const char *value) {
  int fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  size_t length = strlen(value);
  ssize_t written = write(fd, value, length);
  int saved = errno;
  close(fd);
  if (written != (ssize_t)length) {
    errno = written < 0 ? saved : EIO;
    return -1;
  }
  return 0;
}

/* Prints the folder of `path` (a file's, or the folder itself for -d) in the shell's words, and exits 125. */
static void cannot_set_up(const char *path, int is_dir) {
  const char *slash = strrchr(path, '/');
  int length = is_dir || slash == NULL ? (int)strlen(path) : (int)(slash - path);
  fprintf(stderr, "toolgate: cannot set up the cgroup %.*s\n", length, path);
  _exit(125);
}

/* Runs the steps argv[1..end); on failure, where it failed (and whether it was a folder step) in *at. */
static int steps(char **argv, int end, const char *pid, const char **at, int *at_dir) {
  for (int i = 1; i < end; i++) {
    const char *step = argv[i];
    if (strcmp(step, "-d") == 0) {
      if (mkdir(argv[i + 1], 0755) != 0 && errno != EEXIST) return *at = argv[i + 1], *at_dir = 1, -1;
      i += 1;
    } else if (strcmp(step, "-w") == 0 || strcmp(step, "-o") == 0) {
      if (write_file(argv[i + 1], argv[i + 2]) != 0 && !(step[1] == 'o' && errno == ENOENT)) {
        return *at = argv[i + 1], *at_dir = 0, -1;
      }
      i += 2;
    } else if (strcmp(step, "-j") == 0) {
      if (write_file(argv[i + 1], pid) != 0) return *at = argv[i + 1], *at_dir = 0, -1;
      i += 1;
    }
  }
  return 0;
}

/* Waits for the gate's newline on stdin, one byte only; exits 125 on anything else, running nothing. */
static void wait_at_gate(void) {
  char byte = 0;
  ssize_t got;
  do got = read(0, &byte, 1);
  while (got < 0 && errno == EINTR);
  if (got != 1 || byte != '\n') _exit(125);
}

int main(int argc, char **argv) {
  // The steps are checked whole before any is done: a malformed line is toolgate's bug, and runs nothing.
  int end = 1;
  while (end < argc && strcmp(argv[end], "--") != 0) {
    const char *step = argv[end];
    int operands = strcmp(step, "-w") == 0 || strcmp(step, "-o") == 0 ? 2
      : strcmp(step, "-d") == 0 || strcmp(step, "-j") == 0 ? 1
      : strcmp(step, "-g") == 0 ? 0 : -1;
    if (operands < 0 || end + operands >= argc) {
      fprintf(stderr, "session-start: bad step %s\n", step);
      return 125;
    }
    end += 1 + operands;
  }
  if (end + 1 >= argc) {
    fputs("usage: session-start [-d DIR | -w FILE VALUE | -o FILE VALUE | -j FILE | -g]... -- PROGRAM [ARG]...\n",
      stderr);
    return 125;
  }
  // A session of its own, so a process group of its own: the tool's `kill 0` reaches its own processes only, and
  // a terminal toolgate has is not the tool's. It never fails here: a spawned child leads no group yet.
  setsid();
  char pid[24];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *at = "";
  int at_dir = 0;
  if (steps(argv, end, pid, &at, &at_dir) != 0 && steps(argv, end, pid, &at, &at_dir) != 0) {
    cannot_set_up(at, at_dir);
  }
  // The gate comes last: the session and the cgroups are made, and the tool waits only for its go.
  for (int i = 1; i < end; i++) {
    if (strcmp(argv[i], "-g") == 0) wait_at_gate();
  }
  execvp(argv[end + 1], argv + end + 1);
  int saved = errno;
  fprintf(stderr, "session-start: failed to execute %s: %s\n", argv[end + 1], strerror(saved));
  return saved == ENOENT ? 127 : 126;
}
