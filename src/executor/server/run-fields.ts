// Fields of a create or follow-up request that a schema cannot fully check: `metadata` (string
// pairs within bounds), `mode` (normal, plan or orchestrate, which needs a sandboxed environment)
// and `config` against the environment's agent kind (a create's and a schedule's).
// Each problem is a 422 naming the field, the bad value and the expected form.

import {
  MAX_CONFIG_BYTES,
  MAX_METADATA_KEY,
  MAX_METADATA_PAIRS,
  MAX_METADATA_VALUE,
  RUN_MODES,
  type RunMode
} from '../../api/schemas.js';
import { mcpServersProblem, modelIdProblem } from '../agents/harness/input.js';
import { agentKindOf } from '../agents/index.js';
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

/**
 * A run's `config.harness.type` must be the one its environment's agent serves (a harness kind
 * serves one: claude-code serves `claude`); other kinds run whatever they were given. A harness
 * kind's model ids (`config.model_id`, `config.harness.model_id`) must look like model ids, and
 * whatever the kind, `config.mcp_servers` stays within its bounds (input.ts) and the whole config
 * within MAX_CONFIG_BYTES.
 */
export function checkHarnessConfig(runConfig: Record<string, unknown>, kind: string): void {
  const mcp = mcpServersProblem(runConfig.mcp_servers);
  if (mcp) throw new ProblemError('invalid_field', mcp);
  // The config is in every record and list page of the run: its size is every later read's cost.
  const bytes = Buffer.byteLength(JSON.stringify(runConfig));
  if (bytes > MAX_CONFIG_BYTES) {
    const [largest, size] = largestField(runConfig);
    throw new ProblemError(
      'invalid_field',
      `config.${largest.slice(0, 100)}: ${size} bytes of JSON; config may take ${MAX_CONFIG_BYTES} bytes in all (64 KiB), this one takes ${bytes}`
    );
  }
  const harness = runConfig.harness;
  // A harness puts the model on its CLI's command line: it must look like a model id, not an option.
  if (agentKindOf(kind)?.harnessType !== undefined) {
    const inner = harness !== null && typeof harness === 'object' ? (harness as Record<string, unknown>) : {};
    const problem =
      modelIdProblem(runConfig.model_id, 'config.model_id') ??
      modelIdProblem(inner.model_id, 'config.harness.model_id');
    if (problem) throw new ProblemError('invalid_field', problem);
  }
  if (harness === undefined || harness === null) return;
  const type = typeof harness === 'object' ? (harness as { type?: unknown }).type : undefined;
  if (
    typeof harness !== 'object' ||
    Array.isArray(harness) ||
    (type !== undefined && typeof type !== 'string')
  )
    throw new ProblemError('invalid_field', 'config.harness: expected an object such as {"type": "claude"}');
  const serves = agentKindOf(kind)?.harnessType;
  if (type === undefined || serves === undefined || type === serves) return;
  throw new ProblemError(
    'invalid_field',
    `config.harness.type ${JSON.stringify(type.slice(0, 40))}: this environment runs the ${kind} agent, which serves harness type ${JSON.stringify(serves)}`
  );
}

/** The field of `object` whose value takes the most bytes of JSON, and how many. */
export function largestField(object: Record<string, unknown>): readonly [string, number] {
  const sizes = Object.entries(object).map(
    ([name, value]) => [name, Buffer.byteLength(JSON.stringify(value) ?? '')] as const
  );
  return sizes.reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0] as const);
}
