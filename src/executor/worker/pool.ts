// The worker pool: the claim loop and the leases. It claims QUEUED runs up to the concurrency
// limits, holds a lease on each while execute.ts runs it, and writes its outcome. A run whose worker
// died (lease expired, or found INPROGRESS at start-up of a single-node store) becomes FAILED
// executor_restarted: never silently re-run, because agents have side effects; maintenance.ts does
// that and the pruning, on this pool's timers. While the store is unreachable the pool pauses and
// its writes retry.

import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { EnvironmentConfig, ExecutorConfig } from '../config/config.js';
import {
  type ClaimStore,
  type Outcome,
  type RunChange,
  type RunRecordStore,
  type StoredRun,
  StoreUnavailableError
} from '../store/types.js';
import { type StopReason, executeRun } from './execute.js';
import type { RunSettings, RunStepStores } from './steps.js';
import { unmountAll } from '../workspace/layers.js';
import { unmountAllNow } from '../workspace/mounts.js';
import {
  failOrphans,
  freeSpaceForRuns,
  pruneFinishedRuns,
  reapExpiredLeases,
  sweepFinishedWorkspaces
} from './maintenance.js';
import { boundTranscript } from './transcript-budget.js';
import { redactSecrets, redactingRecorder } from './orchestrate.js';
import { freeSpaceProblem, stopSurvivors } from '../sandbox/processes.js';
import { environmentGone } from '../runs/outcomes.js';

/**
 * The stores as the worker sees them: the queue (claims and leases), the runs' changes, reads and
 * pruning, and what executing a run needs (its transcript, artifacts, holds and run tokens).
 */
export interface WorkerStores extends RunStepStores {
  claims: ClaimStore;
  runs: Pick<RunRecordStore, 'getRun' | 'getRunAnyTeam' | 'onChange' | 'pruneFinished'>;
}

/** What of the configuration the pool reads: its limits and leases, the environments, where files are. */
export type WorkerSettings = Pick<
  ExecutorConfig,
  'dataDir' | 'configFile' | 'environments' | 'leaseMs' | 'limits' | 'workers' | 'workspaces'
>;

/** How long a stop waits for a pump or sweep under way once the runs ended (a hung store call). */
const STOP_WAIT_MS = 10_000;

/** How long a finished run's outcome is retried while the store is unreachable. */
const FINISH_RETRY_MS = 10 * 60_000;

interface Active {
  run: StoredRun;
  controller: AbortController;
  done: Promise<void>;
}

export class WorkerPool {
  readonly owner = `node-${randomUUID()}`;
  private claims = 0;
  /**
   * Claims whose answer was lost (the store went away mid-claim): each may have committed. Every
   * claim has its own lease owner, so once the store is back the pool asks for the run leased to
   * it and runs it; without this the run would sit INPROGRESS until its lease expired, unrun.
   */
  private readonly uncertain: string[] = [];
  private readonly active = new Map<string, Active>();
  private readonly environments: Map<string, EnvironmentConfig>;
  /** What every run reads of the configuration, built once. */
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe?: () => void;
  private draining = false;
  private pumping = false;
  private pumpAgain = false;
  /** The pump and the sweep under way: either may launch a run or mount a workspace; stop waits for them. */
  private readonly underWay = new Set<Promise<unknown>>();
  /** On an exit without a stop (a second signal): no workspace stays mounted after the process. */
  private readonly unmountOnExit = () => unmountAllNow(this.config.dataDir);

  constructor(
    private readonly stores: WorkerStores,
    private readonly config: WorkerSettings,
    private readonly log: FastifyBaseLogger,
    /** False on API-only nodes: they sweep abandoned runs and prune, but run nothing. */
    private readonly runsWork = true,
    /** The run's session link, for what publishing writes (commit message, pull request). */
    private readonly sessionLink?: (run: StoredRun) => string | undefined,
    /** Where this node's runs reach the executor's API (orchestrate turns); undefined: nowhere. */
    private readonly apiUrl?: () => string | undefined
  ) {
    this.environments = new Map(config.environments.map(env => [env.id, env]));
  }

  /** What a run reads of the configuration, as it is when the run starts. */
  private get runSettings(): RunSettings {
    const { dataDir, configFile, workspaces } = this.config;
    return { dataDir, configFile, workspaces };
  }

  /** Fails runs left INPROGRESS by a previous process, then starts claiming. */
  async start(): Promise<void> {
    // Processes a killed predecessor left running are stopped before their runs are failed.
    if (this.runsWork) await stopSurvivors(this.config.dataDir, this.log);
    if (this.runsWork) process.on('exit', this.unmountOnExit);
    await failOrphans(this.stores.claims, this.log);
    if (this.runsWork) this.unsubscribe = this.stores.runs.onChange(run => this.onChange(run));
    const every = (ms: number, work: () => Promise<unknown>) => {
      const timer = setInterval(
        () =>
          void work().then(
            () => (this.storeDown = false),
            error => this.timerFailed(error)
          ),
        ms
      );
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(200, Math.floor(this.config.leaseMs / 3)), () => this.heartbeat());
    // Expired leases are looked for often, so another node's runs fail soon after its lease ends.
    every(Math.max(100, Math.min(1000, Math.floor(this.config.leaseMs / 10))), () => this.reap());
    every(3_600_000, () => this.prune());
    if (this.runsWork) {
      // The fallback behind change notifications: a claim attempt a second when idle (every 5 s on
      // a shared store, whose own fallback poll re-announces changes a node missed).
      every(this.stores.claims.shared ? 5000 : 1000, () => this.pump());
      every(Math.min(60_000, Math.max(1000, this.config.workspaces.retentionMs / 2)), () => this.sweep());
      await this.sweep();
    }
    await this.prune();
    await this.pump();
  }

  private storeDown = false;

  /** A timer's failure: one warning when the store goes away (not one a second), errors as errors. */
  private timerFailed(error: unknown): void {
    if (error instanceof StoreUnavailableError) {
      if (!this.storeDown)
        this.log.warn({ err: error }, 'store unavailable: the worker pauses until it is back');
      this.storeDown = true;
      return;
    }
    this.log.error({ err: error }, 'worker timer failed');
  }

  /** A write the run's outcome depends on: retried while the store is unreachable, up to `forMs`. */
  private async persist<T>(work: () => Promise<T>, forMs: number): Promise<T> {
    const until = Date.now() + forMs;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      try {
        const result = await work();
        this.storeDown = false;
        return result;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || Date.now() + delay > until) throw error;
        this.timerFailed(error);
        await new Promise(resolve => setTimeout(resolve, delay));
      }
    }
  }

  get runningCount(): number {
    return this.active.size;
  }

  /** Stops claiming, lets running runs finish up to the grace period, then stops them. */
  async stop(graceMs: number): Promise<void> {
    this.draining = true;
    const all = () => Promise.all([...this.active.values()].map(active => active.done));
    const timer = new Promise(resolve => setTimeout(resolve, graceMs).unref());
    // A claim answered now still launches its run: that run gets the grace period like the others.
    await Promise.race([Promise.allSettled([...this.underWay]), timer]);
    await Promise.race([all(), timer]);
    for (const active of this.active.values()) active.controller.abort('shutdown' satisfies StopReason);
    await all();
    for (const timer of this.timers) clearInterval(timer);
    // What began meanwhile ends before the unmount: a sweep may mount a retained workspace again,
    // a pump launch a run whose claim was answered late (stopped at once).
    const settled = new Promise(resolve => setTimeout(resolve, STOP_WAIT_MS).unref());
    await Promise.race([Promise.allSettled([...this.underWay]), settled]);
    for (const active of this.active.values()) active.controller.abort('shutdown' satisfies StopReason);
    await all();
    // No copy-on-write workspace stays mounted after the node (the next start mounts retained ones).
    if (this.runsWork) await unmountAll(this.config.dataDir).catch(() => undefined);
    process.removeListener('exit', this.unmountOnExit);
    this.unsubscribe?.();
  }

  /** Runs `work` as one of the tasks stop waits for. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.underWay.add(work);
    const done = () => this.underWay.delete(work);
    work.then(done, done);
    return work;
  }

  private onChange(run: RunChange): void {
    if (run.state === 'QUEUED') this.pumpSafely();
    const active = this.active.get(run.run_id);
    if (active && run.state === 'CANCELLED') active.controller.abort('cancelled' satisfies StopReason);
  }

  /** A pump whose failure (the store being busy or full, say) is logged; the next tick tries again. */
  private pumpSafely(): void {
    this.pump().catch(error => this.log.error({ err: error }, 'could not claim runs'));
  }

  /** Claims runs while there is capacity. Re-entrant calls coalesce into one more pass. */
  async pump(): Promise<void> {
    if (!this.runsWork) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    return this.track(this.claimWhileRoom());
  }

  private async claimWhileRoom(): Promise<void> {
    try {
      do {
        this.pumpAgain = false;
        await this.settleUncertainClaims();
        if (!this.draining && this.active.size < this.config.workers)
          await freeSpaceForRuns(this.config, await this.inUse(), this.log);
        while (
          !this.draining &&
          this.active.size < this.config.workers &&
          !freeSpaceProblem(this.config, this.log)
        ) {
          const owner = `${this.owner}/${++this.claims}`;
          let run: StoredRun | undefined;
          try {
            run = await this.stores.claims.claimNext(
              owner,
              this.config.leaseMs,
              this.fullEnvironments(),
              now(),
              this.config.limits.maxRunningRunsPerTeam
            );
          } catch (error) {
            if (error instanceof StoreUnavailableError) this.uncertain.push(owner);
            throw error;
          }
          if (!run) break;
          this.launch(run);
        }
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private async settleUncertainClaims(): Promise<void> {
    while (this.uncertain.length > 0) {
      const owner = this.uncertain[0]!;
      const run = await this.stores.claims.findClaim(owner);
      this.uncertain.shift();
      if (run && !this.active.has(run.run_id)) {
        this.log.info({ run_id: run.run_id }, 'a claim whose answer was lost had committed: running the run');
        this.launch(run);
      }
    }
  }

  private fullEnvironments(): string[] {
    const counts = new Map<string, number>();
    for (const { run } of this.active.values())
      counts.set(run.environment_id, (counts.get(run.environment_id) ?? 0) + 1);
    return [...this.environments.values()]
      .filter(env => (counts.get(env.id) ?? 0) >= env.maxConcurrentRuns)
      .map(env => env.id);
  }

  private launch(run: StoredRun): void {
    const controller = new AbortController();
    const active: Active = { run, controller, done: Promise.resolve() };
    this.active.set(run.run_id, active);
    active.done = this.execute(run, controller)
      .catch(error => this.log.error({ err: error, run_id: run.run_id }, 'run execution failed'))
      .finally(() => {
        this.active.delete(run.run_id);
        this.pumpSafely();
      });
  }

  private async execute(run: StoredRun, controller: AbortController): Promise<void> {
    const environment = this.environments.get(run.environment_id);
    if (!environment) {
      await this.finish(run, environmentGone(run.environment_id));
      return;
    }
    // The run's secrets (an orchestrate turn's credential) never reach its transcript or status.
    const secrets = new Set<string>();
    const record = redactingRecorder(
      boundTranscript(
        (kind, data) =>
          this.persist(
            () => this.stores.transcript.appendEvent(run.run_id, kind, data, now()),
            this.config.leaseMs
          ).then(() => undefined),
        this.config.limits.transcriptBytes
      ),
      secrets
    );
    const outcome = await executeRun({
      run,
      environment,
      config: this.runSettings,
      controller,
      record,
      log: this.log,
      stores: this.stores,
      sessionLink: this.sessionLink,
      apiUrl: this.apiUrl,
      secrets
    });
    if (outcome.status_message) outcome.status_message = redactSecrets(outcome.status_message, secrets);
    await this.finish(run, outcome);
  }

  private async finish(run: StoredRun, outcome: Outcome): Promise<void> {
    const at = now();
    const finished = await this.persist(
      () => this.stores.claims.finishRun(run.run_id, run.lease_owner!, outcome, at),
      FINISH_RETRY_MS
    );
    // A follow-up that arrived after the last turn looked is the store's to take: the finish queues
    // the run again in its transaction (store/run-changes.ts requeueWaiting).
    if (!finished) {
      // Cancelled meanwhile, failed as abandoned, or finished by an earlier try whose answer was lost.
      const stored = await this.stores.runs.getRunAnyTeam(run.run_id).catch(() => undefined);
      this.log.info(
        { run_id: run.run_id, state: stored?.state, error_code: stored?.error_code },
        'the run was no longer held by this worker when its agent stopped'
      );
    }
  }

  private heartbeating = false;

  /**
   * Renews every lease this pool holds. While the store is unreachable it keeps trying (every
   * second at most), so the leases are renewed as soon as the store is back: an outage of up to
   * about two thirds of a lease costs no run.
   */
  private async heartbeat(): Promise<void> {
    if (this.heartbeating) return;
    this.heartbeating = true;
    try {
      for (const [runId, active] of this.active) {
        const held = await this.persist(
          () => this.stores.claims.renewLease(runId, active.run.lease_owner!, this.config.leaseMs),
          this.config.leaseMs
        );
        if (!held && !active.controller.signal.aborted)
          active.controller.abort('lease_lost' satisfies StopReason);
      }
    } finally {
      this.heartbeating = false;
    }
  }

  private reap(): Promise<void> {
    return reapExpiredLeases(this.stores.claims, this.log);
  }

  private prune(): Promise<void> {
    return pruneFinishedRuns(this.stores.runs, this.config, this.log);
  }

  private sweep(): Promise<void> {
    if (this.draining) return Promise.resolve();
    return this.track(this.inUse().then(inUse => sweepFinishedWorkspaces(this.config, inUse, this.log)));
  }

  /**
   * The runs whose files must stay as they are: those running here, and those a run (of any node)
   * holds while it reads them (a conversation_id start). Throws when the store cannot say, so no
   * sweep removes what a hold protects.
   */
  private async inUse(): Promise<Set<string>> {
    return new Set([...this.active.keys(), ...(await this.stores.holds.heldRuns())]);
  }
}

function now(): string {
  return new Date().toISOString();
}
