// What the log shows while the action waits: each state change with the time since the step
// started, the session link the moment it is known, and a heartbeat at least once a minute.

import type { Run } from '../client/index.js';
import { formatDuration } from '../common/duration.js';
import * as log from './log.js';
import { setOutput } from './step-outputs.js';

const HEARTBEAT_MS = 60_000;

export class Progress {
  private state = 'QUEUED';
  private linkAnnounced = false;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly runId: string,
    private readonly startedAt: number,
    private readonly onChange: (run: Run) => void = () => {}
  ) {
    this.heartbeat = setInterval(
      () => log.info(`[${this.elapsed()}] run ${this.runId} is still ${this.state}`),
      HEARTBEAT_MS
    );
    this.heartbeat.unref();
  }

  readonly onStateChange = (run: Run, previous: Run | undefined): void => {
    this.state = run.state;
    const from = previous ? `${previous.state} → ` : '';
    log.info(`[${this.elapsed()}] run ${this.runId}: ${from}${run.state}`);
    this.announceLink(run);
    this.onChange(run);
  };

  readonly onUnknownState = (state: string): void => {
    log.info(`State ${state} is new to this action; it is treated as not finished.`);
  };

  readonly onTransientError = (error: Error, consecutive: number): void => {
    log.info(
      `[${this.elapsed()}] could not read the run (${consecutive} in a row), will retry: ${error.message}`
    );
  };

  /** Whether the log has shown the session link. */
  get linkShown(): boolean {
    return this.linkAnnounced;
  }

  announceLink(run: Run | undefined): void {
    if (this.linkAnnounced || !run?.session_link) return;
    this.linkAnnounced = true;
    setOutput('session-link', run.session_link);
    log.info(`Session: ${run.session_link}`);
  }

  elapsed(): string {
    return formatDuration(Date.now() - this.startedAt);
  }

  stop(): void {
    clearInterval(this.heartbeat);
  }
}
