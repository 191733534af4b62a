// The agent's final answer and the structured output at its end, shared by the action and the
// command line: which text counts as the answer, how the last JSON object is found in it, and
// how it is checked against a JSON Schema with messages a person can act on.

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { Conversation, ConversationStep } from '../api/index.js';

/**
 * The last assistant `text` block of the conversation, nested steps included, in order.
 * Events that follow it (state changes, the diff) do not count; undefined when there is none.
 */
export function finalAnswer(conversation: Conversation): string | undefined {
  let answer: string | undefined;
  const visit = (steps: ConversationStep[]) => {
    for (const step of steps) {
      for (const message of step.messages) {
        if (message.role !== 'assistant') continue;
        for (const block of message.content) {
          if (block.type === 'text' && typeof block.text === 'string' && block.text.trim() !== '') {
            answer = block.text;
          }
        }
      }
      visit(step.steps);
    }
  };
  visit(conversation.steps);
  return answer;
}

/**
 * The last JSON object of a text: a ```json block or a bare `{…}`, whichever ends last. The text
 * is scanned from the start for outermost objects (braces inside JSON strings do not count), so
 * an object nested in a larger one is never taken for the answer. Undefined when there is none.
 */
export function lastJsonObject(text: string): Record<string, unknown> | undefined {
  let last: Record<string, unknown> | undefined;
  const budget = { steps: SCAN_BUDGET };
  for (let start = text.indexOf('{'); start >= 0 && budget.steps > 0;) {
    const end = matchingBrace(text, start, budget);
    const value = end === undefined ? undefined : parseObject(text.slice(start, end + 1));
    if (value) last = value;
    start = text.indexOf('{', value ? end! + 1 : start + 1);
  }
  return last;
}

function parseObject(source: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(source.trim());
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Objects longer than this are not looked for. */
const MAX_OBJECT_CHARS = 1024 * 1024;
/**
 * Characters scanned in all, at most: a text of thousands of unclosed braces cannot make the
 * search quadratic (it then stops, keeping what it found; real answers stay far below this).
 */
const SCAN_BUDGET = 20_000_000;

/**
 * Index of the `}` closing the `{` at `start`, skipping braces inside JSON strings; undefined
 * when there is none or the span cannot be JSON (a string running into a line break), so a
 * stray quote in prose costs one line of scanning, not the rest of the text.
 */
function matchingBrace(text: string, start: number, budget: { steps: number }): number | undefined {
  let depth = 0;
  let inString = false;
  const end = Math.min(text.length, start + MAX_OBJECT_CHARS, start + budget.steps);
  for (let i = start; i < end; i++) {
    budget.steps--;
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      else if (char === '\n') return undefined;
    } else if (char === '"') inString = true;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return i;
  }
  return undefined;
}

export class SchemaError extends Error {}

export interface SchemaCheck {
  valid: boolean;
  /** The first violations, each `path: rule`, e.g. `/verdict: must be equal to one of the allowed values`. */
  problems: string[];
}

/** How many violations a message names before it says "and N more". */
const SHOWN_PROBLEMS = 5;

/**
 * Compiles a JSON Schema once. A schema that is not valid JSON Schema throws a SchemaError
 * naming the first problems, so it is reported before any run exists.
 */
export function compileSchema(schema: unknown): (value: unknown) => SchemaCheck {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new SchemaError('output schema: expected a JSON object such as {"type": "object", ...}');
  }
  // Strict about the schema itself: an unknown keyword (any JSON object that is not a schema, say
  // a credentials file) is refused rather than read as a schema that allows everything.
  const ajv = new Ajv({
    allErrors: true,
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false
  });
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new SchemaError(`output schema is not a valid JSON Schema: ${(error as Error).message}`);
  }
  return value => {
    if (validate(value)) return { valid: true, problems: [] };
    return { valid: false, problems: (validate.errors ?? []).map(describeError) };
  };
}

/** One line naming the violations: the first few, then how many more. */
export function summarizeProblems(problems: string[]): string {
  const shown = problems.slice(0, SHOWN_PROBLEMS).join('; ');
  const more = problems.length - SHOWN_PROBLEMS;
  return more > 0 ? `${shown}; and ${more} more` : shown;
}

function describeError(error: ErrorObject): string {
  const path = error.instancePath === '' ? '(the object)' : error.instancePath;
  const params = error.params as Record<string, unknown>;
  let rule = `${error.message ?? 'is invalid'}`;
  if (error.keyword === 'required') rule = `must have property ${JSON.stringify(params.missingProperty)}`;
  else if (error.keyword === 'additionalProperties') {
    rule = `must not have property ${JSON.stringify(params.additionalProperty)}`;
  } else if (error.keyword === 'enum') {
    rule = `must be one of ${(params.allowedValues as unknown[]).map(v => JSON.stringify(v)).join(', ')}`;
  }
  return `${path}: ${rule} (${error.keyword})`;
}

export type StructuredOutput = { ok: true; value: Record<string, unknown> } | { ok: false; reason: string };

/** Finds the last JSON object of the answer and checks it against the schema. */
export function structuredOutput(
  answer: string | undefined,
  check: (value: unknown) => SchemaCheck
): StructuredOutput {
  if (answer === undefined || answer.trim() === '') {
    return { ok: false, reason: 'the agent gave no answer, so there is no JSON object to check' };
  }
  const value = lastJsonObject(answer);
  if (!value) {
    return {
      ok: false,
      reason: 'the answer does not end with a JSON object (a ```json block or a bare {...})'
    };
  }
  let result: SchemaCheck;
  try {
    result = check(value);
  } catch (error) {
    // A validator recurses with the value: an object nested a million levels deep overflows it.
    if (!(error instanceof RangeError)) throw error;
    return { ok: false, reason: 'the JSON object is nested too deeply to check against the schema' };
  }
  if (!result.valid) {
    return {
      ok: false,
      reason: `the JSON object does not match the schema: ${summarizeProblems(result.problems)}`
    };
  }
  return { ok: true, value };
}
