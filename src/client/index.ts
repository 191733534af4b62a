export * from '../api/index.js';
// Helpers the client's users (the CLI, scripts) have always had from here; not part of the contract.
export * from '../common/duration.js';
export * from '../common/table.js';
export * from './client.js';
export * from './errors.js';
export { type Run, ParseError, parseRun } from './parse.js';
export { DEFAULT_RETRY, type RetryOptions, retryDelayMs, shouldRetry } from './retry.js';
export type { CallOptions, PollOptions, PollResult, RunPoller } from './poll.js';
export { type WaitOptions, type WaitResult, waitForRun } from './wait.js';
export * from './run-readers.js';
export * from './result.js';
export { type FollowOptions, type FollowPosition, RunFollower } from './follow.js';
