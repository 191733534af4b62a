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
/** What a CLI says when it has no key at all: Claude Code asks for a login, Gemini for an auth method. */
const NO_KEY = [
  /not logged in/i,
  /please run \/login/i,
  /(?:api[_ ]key|auth method)\b[^\n]{0,80}\b(?:not (?:set|found|provided)|missing|required)/i,
  /please set an auth method/i,
  /must (?:specify|set|provide)\b[^\n]{0,60}API[_ ]?KEY\b/i,
  /(?:didn't|did not) provide an api key/i
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

/** Whether a CLI's message says it has no key (a missing key, not a crash). */
export function saysNoKey(message: string): boolean {
  const text = message.length > CLASSIFIED_CHARS ? message.slice(0, CLASSIFIED_CHARS) : message;
  return NO_KEY.some(pattern => pattern.test(text));
}

/** The error code for a CLI's error message. */
export function classifyFailure(message: string): HarnessFailure['code'] {
  const text = message.length > CLASSIFIED_CHARS ? message.slice(0, CLASSIFIED_CHARS) : message;
  if (MODEL.some(pattern => pattern.test(text))) return 'agent_model_not_found';
  if (AUTH.some(pattern => pattern.test(text)) || saysNoKey(text)) return 'agent_auth_failed';
  if (RATE.some(pattern => pattern.test(text))) return 'agent_rate_limited';
  return 'agent_crashed';
}

/**
 * A missing or refused key's failure, with the variable to set: the CLI's own words say only that
 * it is not logged in, or that the provider refused a key, never which of the environment's
 * variables it read. `listed` are the variables the environment passes to the run.
 */
export function withKeyHint(
  failure: HarnessFailure,
  keyVariables: string[],
  listed: Record<string, string>
): HarnessFailure {
  if (failure.code !== 'agent_auth_failed' || keyVariables.length === 0) return failure;
  const given = keyVariables.filter(name => listed[name] !== undefined);
  const names = keyVariables.join(' or ');
  const hint =
    given.length > 0
      ? `the model API refused the key in ${given.join(' and ')}; check its value where the executor runs`
      : `no model key reached the CLI: set ${names} where the executor runs and list it under the environment's \`env\``;
  return { code: failure.code, message: `${failure.message} (${hint})` };
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
