// Which of our error codes a CLI's own error message means. The Codex and Gemini CLIs report a failed
// model request as text that quotes the HTTP status and the provider's error (e.g. "unexpected
// status 401 Unauthorized: Incorrect API key provided", "[API Error: {"error":{"code":429,…}}]"),
// so the words decide: an authentication failure, a rate limit, an unknown model, else a crash.

import type { HarnessFailure } from './cli-spec.js';

const AUTH = [
  /\b401\b/,
  /\b403\b/,
  /unauthori[sz]ed/i,
  /unauthenticated/i,
  /permission[_ ]denied/i,
  /invalid[_ ]api[_ ]key/i,
  /incorrect api key/i,
  /api key not valid/i,
  /missing (?:an )?api key/i,
  /authentication (?:failed|error|required)/i
];
const RATE = [
  /\b429\b/,
  /rate[_ -]?limit/i,
  /too many requests/i,
  /resource[_ ]exhausted/i,
  /quota (?:exceeded|exhausted)/i,
  /usage limit/i
];
const MODEL = [
  /model[_ ]not[_ ]found/i,
  /model\b[^\n]{0,120}\b(?:does not exist|not found|is not supported|not supported|unknown)/i,
  /unknown model/i,
  /invalid model/i,
  /models\/[^\s:]{1,200} is not found/i
];

/**
 * Characters of a message the words are looked for in (what a failed run's status message shows).
 * The message is as long as a stream line (8 MiB), any process in the sandbox can write that line
 * to the CLI's stdout, and the patterns run in the executor's event loop: over a whole line,
 * `models/` repeated made `models\/[^\s:]+` backtrack for hours (140 s a MiB, growing quadratically).
 */
const CLASSIFIED_CHARS = 8 * 1024;

/** The error code for a CLI's error message. */
export function classifyFailure(message: string): HarnessFailure['code'] {
  const text = message.length > CLASSIFIED_CHARS ? message.slice(0, CLASSIFIED_CHARS) : message;
  if (MODEL.some(pattern => pattern.test(text))) return 'agent_model_not_found';
  if (AUTH.some(pattern => pattern.test(text))) return 'agent_auth_failed';
  if (RATE.some(pattern => pattern.test(text))) return 'agent_rate_limited';
  return 'agent_crashed';
}

/** The last non-empty lines of a stderr tail, at most `max` characters, for a crash with no message. */
export function tailLines(text: string, max = 1000): string {
  const trimmed = text.trim();
  return trimmed.length <= max ? trimmed : `…${trimmed.slice(trimmed.length - max)}`;
}

/**
 * A failure from what the CLI said: its own message when it gave one, else its stderr, else its exit
 * code. `undefined` when it exited 0 without reporting an error.
 */
export function failureFrom(
  program: string,
  exitCode: number | null,
  reported: string | undefined,
  stderrTail: string
): HarnessFailure | undefined {
  if (reported === undefined && exitCode === 0) return undefined;
  const stderr = tailLines(stderrTail);
  const message =
    reported ??
    (stderr
      ? `${program} exited with ${exitCode === null ? 'a signal' : `code ${exitCode}`}: ${stderr}`
      : `${program} exited with ${exitCode === null ? 'a signal' : `code ${exitCode}`} and said nothing`);
  return { code: classifyFailure(message), message };
}
