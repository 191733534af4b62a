// The runner cancels a step with SIGINT, then SIGTERM 7.5 s later, then kills it 2.5 s after that.
// We turn the first signal into an AbortSignal so the wait stops and the run can be cancelled in time.

export interface Termination {
  /** Fires on the first SIGINT or SIGTERM. */
  signal: AbortSignal;
  /** Fires a few seconds later: a create in flight may finish first, so its run can be cancelled. */
  graceSignal: AbortSignal;
  dispose(): void;
}

const CREATE_GRACE_MS = 4000;

export function onTermination(): Termination {
  const controller = new AbortController();
  const grace = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) return;
    controller.abort(new Error(`received ${signal}`));
    timer = setTimeout(() => grace.abort(new Error(`received ${signal}`)), CREATE_GRACE_MS);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    graceSignal: grace.signal,
    dispose() {
      clearTimeout(timer);
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    }
  };
}
