/**
 * One resident helper shell that says whether a call's cgroup holds any process, for a run that makes many
 * calls: at a call's end its tree is settled through its cgroup (cgroup_end.ts), and where the tool left nothing
 * behind (the usual end) there is nothing to signal or wait for. Asking this shell costs a line through a pipe;
 * starting a shell per call cost a process start on toolgate's one thread (a profile of `serve --http` under load
 * found a third of its time in process starts, half of them this check). toolgate may not read `/sys` itself
 * (Deno lets only `--allow-all` read it), hence a shell. It ends with its input: when the launcher closes it, or
 * when toolgate is gone.
 *
 * Not here: ending a tree that is not empty (cgroup_end.ts's shell, as before), making and joining cgroups
 * (cgroups.ts).
 *
 * @module
 */
/**
 * Reads one folder per line and answers one line each: `1` when the cgroup holds no process (`cgroup.events`
 * says `populated 0` under v2, `cgroup.procs` lists nobody under v1, or the folder is gone), `0` otherwise.
 * Builtins only: no process per question.
 */
const SCRIPT = [
  // A Ctrl-C on the terminal reaches this shell too: it ends with its input only.
  "trap '' INT HUP TERM",
  "while read -r dir; do",
  "  empty=1",
  '  if [ -e "$dir/cgroup.events" ]; then',
  '    while read -r key value; do [ "$key" = populated ] && [ "$value" = 1 ] && empty=0; done < "$dir/cgroup.events"',
  '  elif [ -e "$dir/cgroup.procs" ]; then',
  '    while read -r pid; do empty=0; done < "$dir/cgroup.procs"',
  "  fi",
  "  echo $empty",
  "done",
].join("\n");

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Asks one resident shell whether cgroups are empty; questions are answered in the order asked. Any trouble (the shell
 * cannot start, or went) answers `false`: the caller then ends the tree with a shell of its own, as without it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CgroupWatch } from "./cgroup_watch.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/cgroup.procs`, "");
 * await using watch = new CgroupWatch("/bin/sh");
 * assert.equal(await watch.empty(dir), true);
 * Deno.writeTextFileSync(`${dir}/cgroup.procs`, "4242\n");
 * assert.equal(await watch.empty(dir), false);
 * Deno.writeTextFileSync(`${dir}/cgroup.events`, "populated 0\nfrozen 0\n");
 * assert.equal(await watch.empty(dir), true);
 * ```
 */
export class CgroupWatch implements AsyncDisposable {
  readonly #shell: string;
  #child?: Deno.ChildProcess;
  #writer?: WritableStreamDefaultWriter<Uint8Array>;
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  #buffered = "";
  /** The questions written and not answered yet, in the order asked (the shell answers in that order). */
  #waiting: ((empty: boolean) => void)[] = [];
  /** The reading of the answers, while questions wait for theirs. */
  #reading?: Promise<void>;
  #broken = false;

  /** `shell`: an absolute path to a POSIX shell (the cgroup support's). */
  constructor(shell: string) {
    this.#shell = shell;
  }

  /**
   * Whether the cgroup `dir` holds no process; `false` when that cannot be told. Questions asked at once are
   * written at once (the shell answers them in turn), not each after the answer before it.
   */
  empty(dir: string): Promise<boolean> {
    // A line is a question: a folder whose name breaks lines cannot be asked about.
    if (this.#broken || dir.includes("\n")) return Promise.resolve(false);
    try {
      if (this.#child === undefined) {
        const child = new Deno.Command(this.#shell, {
          args: ["-c", SCRIPT, "sh"],
          stdin: "piped",
          stdout: "piped",
          stderr: "null",
          clearEnv: true,
          env: { PATH: "/usr/bin:/bin" },
        }).spawn();
        // It never keeps toolgate running: it ends when its input does.
        child.unref();
        this.#child = child;
        this.#writer = child.stdin.getWriter();
        this.#reader = child.stdout.getReader();
      }
    } catch {
      this.#broken = true;
      return Promise.resolve(false);
    }
    const { promise, resolve } = Promise.withResolvers<boolean>();
    this.#waiting.push(resolve);
    this.#writer!.write(encoder.encode(dir + "\n")).catch(() => this.#fail());
    this.#reading ??= this.#read();
    return promise;
  }

  /** Reads answers while questions wait for them. */
  async #read(): Promise<void> {
    // Its pipe is unreferenced with it: a timer keeps toolgate running while a question waits for its answer.
    const waiting = setInterval(() => {}, 60_000);
    try {
      while (this.#waiting.length > 0) {
        const line = await this.#line();
        this.#waiting.shift()?.(line === "1");
      }
    } catch {
      this.#fail();
    } finally {
      clearInterval(waiting);
      this.#reading = undefined;
    }
  }

  /** The shell cannot be asked: every waiting question is answered `false`, and no other is asked of it. */
  #fail(): void {
    this.#broken = true;
    for (const resolve of this.#waiting.splice(0)) resolve(false);
    void this.#end();
  }

  /** The shell's next answer line. */
  async #line(): Promise<string> {
    while (!this.#buffered.includes("\n")) {
      const { value, done } = await this.#reader!.read();
      if (done) throw new Error("the helper shell ended");
      this.#buffered += decoder.decode(value, { stream: true });
    }
    const end = this.#buffered.indexOf("\n");
    const line = this.#buffered.slice(0, end);
    this.#buffered = this.#buffered.slice(end + 1);
    return line;
  }

  /** Ends the shell (its input closed), once the questions asked are answered, and waits for it. Idempotent. */
  async close(): Promise<void> {
    await this.#reading;
    await this.#end();
  }

  async #end(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.#child = undefined;
    const writer = this.#writer;
    const reader = this.#reader;
    this.#writer = this.#reader = undefined;
    this.#buffered = "";
    // Unreferenced: a timer keeps toolgate running until the shell is gone.
    const waiting = setInterval(() => {}, 60_000);
    try {
      await writer?.close().catch(() => {});
      await reader?.cancel().catch(() => {});
      await child.status;
    } finally {
      clearInterval(waiting);
    }
  }

  /** {@linkcode CgroupWatch.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
