// Fields of a create or follow-up request that a schema cannot fully check: `metadata` (string
// pairs within bounds) and `mode` (normal, plan or orchestrate, which needs a sandboxed environment).
// Each problem is a 422 naming the field, the bad value and the expected form.

import {
  MAX_METADATA_KEY,
  MAX_METADATA_PAIRS,
  MAX_METADATA_VALUE,
  RUN_MODES,
  type RunMode
} from '../../api/schemas.js';
import { type EnvironmentConfig, orchestrateProblem } from '../config/config.js';
import { ProblemError } from './problem.js';

/** A create request's `metadata`: at most 20 string pairs, keys ≤ 64 and values ≤ 512 characters; throws a ProblemError (422) otherwise. */
export function checkMetadata(metadata: unknown): void {
  if (metadata === undefined || metadata === null) return;
  const expected = `an object of at most ${MAX_METADATA_PAIRS} string keys (1–${MAX_METADATA_KEY} characters) and string values (at most ${MAX_METADATA_VALUE} characters)`;
  if (typeof metadata !== 'object' || Array.isArray(metadata))
    throw new ProblemError('invalid_field', `metadata: expected ${expected}`);
  const pairs = Object.entries(metadata);
  if (pairs.length > MAX_METADATA_PAIRS)
    throw new ProblemError('invalid_field', `metadata: ${pairs.length} keys; expected ${expected}`);
  for (const [key, value] of pairs) {
    const shown = JSON.stringify(key.slice(0, 70));
    if (key.length === 0 || key.length > MAX_METADATA_KEY)
      throw new ProblemError('invalid_field', `metadata key ${shown}: expected ${expected}`);
    if (typeof value !== 'string' || value.length > MAX_METADATA_VALUE)
      throw new ProblemError('invalid_field', `metadata.${key}: expected ${expected}`);
    // The pairs are kept as text for the list's filter, and PostgreSQL text cannot hold NUL.
    if (key.includes('\0') || value.includes('\0'))
      throw new ProblemError('invalid_field', `metadata key ${shown}: keys and values may not contain NUL`);
  }
}

/** A follow-up's or a create's `mode`: normal (the default), plan or orchestrate. */
export function followupMode(mode: unknown): RunMode {
  if (mode === undefined || mode === null) return 'normal';
  if (typeof mode === 'string' && (RUN_MODES as readonly string[]).includes(mode)) return mode as RunMode;
  throw new ProblemError(
    'invalid_field',
    `mode ${JSON.stringify(String(mode).slice(0, 40))}: expected ${RUN_MODES.join(', ')}`
  );
}

/** Throws a 422 operation_not_supported when `environment` cannot run an orchestrate turn (config.ts says why). */
export function checkOrchestrable(environment: EnvironmentConfig): void {
  const problem = orchestrateProblem(environment);
  if (problem) throw new ProblemError('operation_not_supported', problem);
}
