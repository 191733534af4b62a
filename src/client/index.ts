export * from '../api/index.js';
export * from './client.js';
export * from './errors.js';
export { type Run, ParseError, parseRun } from './parse.js';
export { DEFAULT_RETRY, type RetryOptions, retryDelayMs, shouldRetry } from './retry.js';
export { type WaitOptions, type WaitResult, waitForRun } from './wait.js';
export * from './conversation.js';
export * from './result.js';
export { type FollowOptions, RunFollower } from './follow.js';
