/**
 * The audit log's file side: a line appended to a day's file in one write, that file opened never through a link
 * and checked once open (a regular file of this user's, 0600, one link, still the one the path names), and
 * optionally held open from one line to the next, checked again at each as if just opened. What goes in the line,
 * and the folder's own check, are `audit_log.ts`'s.
 *
 * @module
 */
import { StateDirError } from "./state.ts";
import { checkHeld, checkOpened, createNew, openExisting } from "./private_file.ts";

/** Read and append: the last byte tells whether an earlier write was torn. */
const LOG_OPEN: Deno.OpenOptions = { read: true, append: true };
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

/** Where this process's last line ended: the file (device and inode) and its size just after the write. */
interface LastAppend {
  dev: number;
  ino: number;
  size: number;
}

/** Opens the day's file, never through a link, creating it when there is none, and checks what was opened. */
function openChecked(file: string): { opened: Deno.FsFile; info: Deno.FileInfo } {
  const opened = openExisting(file, LOG_OPEN, "the audit log") ?? createNew(file, LOG_OPEN) ??
    openExisting(file, LOG_OPEN, "the audit log");
  if (opened === undefined) throw new StateDirError(`the audit log ${file} came and went while being opened`);
  try {
    return { opened, info: checkOpened(opened, file, "the audit log") };
  } catch (error) {
    opened.close();
    throw error;
  }
}

/**
 * Appends one line to the opened, checked file (`info` its state just checked) in one write, after a newline when
 * the file's last byte is not one: a record torn by a full disk (ours, or another process's, or one before a
 * restart) must not swallow this one. The file itself remembers whether it was torn, so there is nothing to keep
 * in memory that another process could not see; only when the file is still the one `last` names and has not
 * grown since this process's own whole line ended there is its last byte known without reading it (two calls fewer
 * on every line of a busy log). Returns where this line ended.
 */
function appendLine(
  opened: Deno.FsFile,
  info: Deno.FileInfo,
  line: string,
  last?: LastAppend,
): LastAppend | undefined {
  const ours = last !== undefined && last.ino === info.ino && last.dev === info.dev &&
    last.size === info.size;
  const byte = new Uint8Array(1);
  let torn = false;
  if (info.size > 0 && !ours) {
    // The file is opened with O_APPEND: the offset this moves never decides where a line lands.
    opened.seekSync(info.size - 1, Deno.SeekMode.Start);
    torn = opened.readSync(byte) === 1 && byte[0] !== NEWLINE;
  }
  const bytes = encoder.encode(torn ? "\n" + line : line);
  // One call with the whole line: with O_APPEND no other process's line can land inside it. A short write,
  // which only a full disk causes, is reported; the next record then starts on a line of its own.
  const written = opened.writeSync(bytes);
  if (written !== bytes.length) throw new Error(`only ${written} of ${bytes.length} bytes were written`);
  // Another process's line may have landed between the fstat and this write: the size is then not ours, and
  // the next line reads the last byte again.
  return info.ino === null || info.dev === null
    ? undefined
    : { dev: info.dev, ino: info.ino, size: info.size + bytes.length };
}

/**
 * The day's files of one audit log, each line appended whole (see `appendLine`), where this log's last line ended
 * remembered, and, with `hold`, the file kept open until {@linkcode AuditFile.close}.
 *
 * @example
 * ```ts
 * import { AuditFile } from "./audit_file.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.chmodSync(dir, 0o700);
 * using file = new AuditFile(true);
 * file.append(`${dir}/20260504.log`, '{"tool":"t"}\n');
 * ```
 */
export class AuditFile {
  /** Where this log's last line ended (see appendLine). */
  #last?: LastAppend;
  /** The day's file, kept open, and its state as checked at its opening. */
  #held?: { readonly file: string; readonly opened: Deno.FsFile; readonly info: Deno.FileInfo };

  /** `hold`: keep the day's file open between lines. */
  constructor(readonly hold: boolean) {}

  /**
   * Appends `line` to `file`; throws what went wrong (reported by the log, once). `beforeOpen` runs before a file
   * is opened (its folder's check): a held file that is still the one the path names is written through its
   * descriptor, and nothing of the path is followed for it.
   */
  append(file: string, line: string, beforeOpen: () => void = () => {}): void {
    const last = this.#last;
    this.#last = undefined;
    this.#last = this.#append(file, line, beforeOpen, last);
  }

  /** Appends through the held file when there is one, else through one opened for this line. */
  #append(file: string, line: string, beforeOpen: () => void, last?: LastAppend): LastAppend | undefined {
    if (!this.hold) {
      beforeOpen();
      const { opened, info } = openChecked(file);
      try {
        return appendLine(opened, info, line, last);
      } finally {
        opened.close();
      }
    }
    let info: Deno.FileInfo | undefined;
    if (this.#held?.file === file) {
      try {
        // The same checks as at its opening: still a private regular file of one link, still the one the path names
        // (one lstat: what the path names is the held file itself, or the file is opened anew).
        info = checkHeld(this.#held.info, file, "the audit log");
      } catch {
        // Removed, replaced or changed since: let go, and open what the path names now (checked again there).
      }
    }
    if (info === undefined) {
      // Another day's file, or none held yet.
      this.close();
      beforeOpen();
      const fresh = openChecked(file);
      this.#held = { file, opened: fresh.opened, info: fresh.info };
      info = fresh.info;
    }
    try {
      return appendLine(this.#held!.opened, info, line, last);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Lets go of the file held open; the next line opens it again. Idempotent. */
  close(): void {
    const held = this.#held;
    this.#held = undefined;
    held?.opened.close();
  }

  /** {@linkcode AuditFile.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}
