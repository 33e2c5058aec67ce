/**
 * Who owns each background job, and how many may run: the jobs by owner (an MCP session's id; `""` for the agent
 * loop, the one owner of its run), each owner numbering its own (`job-1`, `job-2`, ...: an id says nothing of
 * another owner's jobs, nor that there are any), a cap per owner beside one across all owners, and the owners that
 * have ended, so that a job whose start was under way when its owner ended is ended too.
 *
 * @module
 */
import type { Job } from "./job.ts";

/**
 * The caps on background jobs running at once: per owner (an MCP session, or the agent loop's run) and across all
 * owners of one toolgate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JOB_CAPS } from "./job_owners.ts";
 * assert.equal(JOB_CAPS.perOwner, 8); // what one session (or the agent loop) may run at once
 * assert.equal(JOB_CAPS.total, 32); // what the whole server may run at once
 * ```
 */
export const JOB_CAPS: JobCaps = { perOwner: 8, total: 32 };

/**
 * The caps on background jobs running at once.
 *
 * @example
 * ```ts
 * import type { JobCaps } from "./job_owners.ts";
 * const caps: JobCaps = { perOwner: 2, total: 4 };
 * ```
 */
export interface JobCaps {
  /** Jobs one owner runs at once (one more of its own is refused until one ends). */
  readonly perOwner: number;
  /** Jobs every owner together runs at once. */
  readonly total: number;
}

/**
 * Ended owners remembered, the oldest forgotten first. Only a start already under way when its owner ended needs
 * the memory (that start ends within seconds), so a bound far above the sessions open at once loses nothing.
 */
const ENDED_KEPT = 1024;

/** One owner's jobs, in the order they started, and its numbering. */
interface Owned {
  readonly jobs: Map<string, Job>;
  /** The number of this owner's last job id handed out. */
  last: number;
  /** Starts admitted and not yet settled (added or cancelled): they count against the caps. */
  pending: number;
}

/**
 * The answer of {@linkcode JobOwners.admit}: the new job's id, or why it cannot start now.
 *
 * @example
 * ```ts
 * import type { Admission } from "./job_owners.ts";
 * const said = (admission: Admission) => admission.ok ? admission.id : admission.reason;
 * ```
 */
export type Admission =
  | { readonly ok: true; readonly id: string }
  | { readonly ok: false; readonly reason: string };

/**
 * The jobs of one toolgate by owner, with the caps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JobOwners } from "./job_owners.ts";
 * const owners = new JobOwners({ perOwner: 1, total: 4 });
 * const first = owners.admit("session-a");
 * assert.equal(first.ok && first.id, "job-1");
 * assert.equal(owners.admit("session-a").ok, false); // session-a runs its one job (its start is under way)
 * const other = owners.admit("session-b");
 * assert.equal(other.ok && other.id, "job-1"); // session-b's own first job
 * ```
 */
export class JobOwners {
  readonly #caps: JobCaps;
  readonly #owners = new Map<string, Owned>();
  readonly #ended = new Set<string>();

  /** No owner yet; caps default to {@linkcode JOB_CAPS}. */
  constructor(caps: Partial<JobCaps> = {}) {
    this.#caps = { ...JOB_CAPS, ...caps };
  }

  /** The caps in force. */
  get caps(): JobCaps {
    return this.#caps;
  }

  /** Jobs running now (and starts under way): `owner`'s, or every owner's. */
  running(owner?: string): number {
    const count = (owned: Owned) => {
      let n = owned.pending;
      for (const job of owned.jobs.values()) if (job.state === "running") n++;
      return n;
    };
    if (owner !== undefined) {
      const owned = this.#owners.get(owner);
      return owned === undefined ? 0 : count(owned);
    }
    let total = 0;
    for (const owned of this.#owners.values()) total += count(owned);
    return total;
  }

  /**
   * Admits one more job of `owner` within both caps and hands out its id; the caller then {@linkcode add}s the
   * job or {@linkcode cancel}s the start. An ended owner starts nothing.
   */
  admit(owner: string): Admission {
    if (this.#ended.has(owner)) {
      return { ok: false, reason: "The session that would own this job has ended; nothing was started." };
    }
    const { perOwner, total } = this.#caps;
    if (this.running(owner) >= perOwner) {
      return {
        ok: false,
        reason:
          `${perOwner} background jobs are running already; wait for one to end or kill one, then try again.`,
      };
    }
    if (this.running() >= total) {
      // Says the server's cap, never whose jobs fill it.
      return {
        ok: false,
        reason: `toolgate runs the most background jobs it allows at once (${total} across all sessions); ` +
          "wait for one of yours to end or kill one, or try again later.",
      };
    }
    const owned = this.#owned(owner);
    owned.pending += 1;
    owned.last += 1;
    return { ok: true, id: `job-${owned.last}` };
  }

  /** Settles an admitted start: the job runs and is `owner`'s. */
  add(job: Job): void {
    const owned = this.#owned(job.scope);
    owned.pending = Math.max(0, owned.pending - 1);
    owned.jobs.set(job.id, job);
  }

  /** Settles an admitted start that did not start a job. */
  cancel(owner: string): void {
    const owned = this.#owners.get(owner);
    if (owned !== undefined) owned.pending = Math.max(0, owned.pending - 1);
  }

  /** The job `id` of `owner`, or `undefined`: another owner's job is not there for it. */
  lookup(id: string, owner: string): Job | undefined {
    return this.#owners.get(owner)?.jobs.get(id);
  }

  /** Every job known, running or ended, each owner's in the order they started. */
  all(): Job[] {
    return [...this.#owners.values()].flatMap((owned) => [...owned.jobs.values()]);
  }

  /** Has `owner` ended? */
  hasEnded(owner: string): boolean {
    return this.#ended.has(owner);
  }

  /** Marks `owner` ended (it starts nothing more) and gives its jobs still running, for the caller to end. */
  end(owner: string): Job[] {
    this.#ended.add(owner);
    if (this.#ended.size > ENDED_KEPT) this.#ended.delete(this.#ended.values().next().value!);
    const owned = this.#owners.get(owner);
    return owned === undefined ? [] : [...owned.jobs.values()].filter((job) => job.state === "running");
  }

  /**
   * Forgets the oldest ended jobs of `owner` past `keep`, and the whole owner once it has ended and runs nothing
   * (nobody can ask about its jobs any more).
   */
  forget(owner: string, keep: number): void {
    const owned = this.#owners.get(owner);
    if (owned === undefined) return;
    const ended = [...owned.jobs.values()].filter((job) => job.state !== "running");
    for (const job of ended.slice(0, Math.max(0, ended.length - keep))) owned.jobs.delete(job.id);
    const running = [...owned.jobs.values()].some((job) => job.state === "running");
    if (this.#ended.has(owner) && owned.pending === 0 && !running) this.#owners.delete(owner);
  }

  #owned(owner: string): Owned {
    let owned = this.#owners.get(owner);
    if (owned === undefined) this.#owners.set(owner, owned = { jobs: new Map(), last: 0, pending: 0 });
    return owned;
  }
}
