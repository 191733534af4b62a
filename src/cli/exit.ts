// The exit codes of `agent-run`, one meaning each, so scripts can branch on them, and the error
// that carries one up to main from wherever a command gives up.

import { AuthenticationError, ConnectionError, type Run } from '../client/index.js';

export const EXIT = {
  /** The run succeeded (or the command did what it was asked). */
  ok: 0,
  /** The run failed, errored or was cancelled; or the service refused the request. */
  failed: 1,
  /** The command line is wrong: unknown option, missing value, unreadable file. */
  usage: 2,
  /** The run did not end within --timeout. */
  timedOut: 3,
  /** The run is BLOCKED, waiting for a person (with --on-blocked fail). */
  blocked: 4,
  /** The service could not be reached, or it refused the key, or there is none. */
  unreachable: 5,
  /** Interrupted by Ctrl-C or SIGTERM (the shell's 128 + SIGINT). */
  interrupted: 130
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0  succeeded        1  failed, error or cancelled   2  bad usage
  3  timed out        4  blocked (waiting for a person)
  5  could not reach or authenticate with the service (or no key)
  130 interrupted (Ctrl-C): run cancels its run, wait and logs leave it running`;

/** A failure with the exit code it means. The message is printed as it is. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: number
  ) {
    super(message);
  }
}

export const usage = (message: string) => new CliError(message, EXIT.usage);

/** The exit code of an error thrown anywhere in a command. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.code;
  if (error instanceof ConnectionError || error instanceof AuthenticationError) return EXIT.unreachable;
  return EXIT.failed;
}

/** The exit code of a run's final state. */
export function exitCodeOfState(run: Run | undefined): number {
  if (run?.state === 'SUCCEEDED') return EXIT.ok;
  if (run?.state === 'BLOCKED') return EXIT.blocked;
  return EXIT.failed;
}
