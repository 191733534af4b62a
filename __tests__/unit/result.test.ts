// The final answer, the last JSON object of it, and JSON Schema messages (src/client/result.ts).
import { describe, expect, it } from '@jest/globals';
import {
  SchemaError,
  compileSchema,
  finalAnswer,
  lastJsonObject,
  structuredOutput
} from '../../src/client/result.js';
import { itemsFromConversation, parseConversation } from '../../src/client/run-readers.js';

const conversation = parseConversation({
  conversation_id: 'c1',
  steps: [
    {
      id: 's1',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Review it' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Looking.' },
            { type: 'action', name: 'run_command', input: { command: 'npm test' } },
            { type: 'action_result', state: 'completed', output: { exit_code: 0, output: 'ok' } },
            { type: 'hologram', shimmer: true }
          ]
        }
      ],
      steps: [
        {
          messages: [{ role: 'assistant', content: [{ type: 'text', text: 'Nested: all good ✓' }] }]
        }
      ]
    },
    {
      messages: [
        { role: 'assistant', content: [{ type: 'event', name: 'state', text: 'SUCCEEDED' }] },
        { role: 'user', content: [{ type: 'text', text: 'not the answer' }] }
      ]
    }
  ]
});

describe('finalAnswer', () => {
  it('is the last assistant text block, nested steps included, events after it ignored', () => {
    expect(finalAnswer(conversation)).toBe('Nested: all good ✓');
  });

  it('is undefined without assistant text', () => {
    expect(finalAnswer(parseConversation({ steps: [] }))).toBeUndefined();
  });

  it('keeps unknown block types and turns an action and its result into one command', () => {
    const items = itemsFromConversation(conversation);
    expect(items).toContainEqual({ type: 'command', command: 'npm test', exitCode: 0, output: 'ok' });
    expect(items).toContainEqual({ type: 'event', text: 'hologram' });
  });
});

describe('lastJsonObject', () => {
  it('takes a fenced json block', () => {
    expect(lastJsonObject('Done.\n```json\n{"verdict": "approve", "n": 2}\n```\n')).toEqual({
      verdict: 'approve',
      n: 2
    });
  });

  it('takes a bare object at the end', () => {
    expect(lastJsonObject('All fine. {"ok": true}')).toEqual({ ok: true });
  });

  it('takes the last of several objects, never one nested inside it', () => {
    const text = 'First {"a": 1} then\n```json\n{"b": {"c": 3}, "d": "}{"}\n```';
    expect(lastJsonObject(text)).toEqual({ b: { c: 3 }, d: '}{' });
    expect(lastJsonObject('{"outer": {"inner": 1}}')).toEqual({ outer: { inner: 1 } });
  });

  it('skips invalid JSON and prose braces', () => {
    expect(lastJsonObject('use {x} or {"x": 1} then {not json}')).toEqual({ x: 1 });
    expect(lastJsonObject('no object {here')).toBeUndefined();
    expect(lastJsonObject('[1, 2]')).toBeUndefined();
  });

  it('stays fast on long answers full of stray braces and quotes', () => {
    const noise = 'if (x) { say "hello\n'.repeat(20_000);
    const started = Date.now();
    expect(lastJsonObject(`${noise}\n{"done": true}`)).toEqual({ done: true });
    lastJsonObject('{ unclosed '.repeat(50_000));
    // Linear work takes well under a second here; a quadratic scan of these 900 kB takes hours.
    // The bound only tells those apart, with room for a loaded machine (speed itself: bench/).
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('keeps non-ASCII text intact', () => {
    expect(lastJsonObject('Résumé: {"título": "naïve ✓ 日本"}')).toEqual({ título: 'naïve ✓ 日本' });
  });
});

describe('schema validation', () => {
  const schema = {
    type: 'object',
    required: ['verdict', 'score'],
    additionalProperties: false,
    properties: {
      verdict: { enum: ['approve', 'reject'] },
      score: { type: 'integer', minimum: 0 }
    }
  };

  it('accepts a matching object', () => {
    expect(compileSchema(schema)({ verdict: 'approve', score: 3 })).toEqual({ valid: true, problems: [] });
  });

  it('names each violation with its path and rule', () => {
    const check = compileSchema(schema)({ verdict: 'maybe', score: -1, extra: 1 });
    expect(check.valid).toBe(false);
    expect(check.problems).toEqual(
      expect.arrayContaining([
        '/verdict: must be one of "approve", "reject" (enum)',
        '/score: must be >= 0 (minimum)',
        '(the object): must not have property "extra" (additionalProperties)'
      ])
    );
    expect(compileSchema(schema)({ verdict: 'approve' }).problems).toEqual([
      '(the object): must have property "score" (required)'
    ]);
  });

  it('refuses a schema that is not JSON Schema', () => {
    expect(() => compileSchema({ type: 'frobnicate' })).toThrow(SchemaError);
    expect(() => compileSchema({ type: 'frobnicate' })).toThrow(/not a valid JSON Schema/);
    expect(() => compileSchema([1])).toThrow(/expected a JSON object/);
  });

  it('explains a missing or invalid object in the answer', () => {
    const check = compileSchema(schema);
    expect(structuredOutput('no json here', check)).toEqual({
      ok: false,
      reason: expect.stringContaining('does not end with a JSON object')
    });
    expect(structuredOutput(undefined, check)).toMatchObject({ ok: false });
    expect(structuredOutput('```json\n{"verdict": "reject", "score": "x"}\n```', check)).toEqual({
      ok: false,
      reason: 'the JSON object does not match the schema: /score: must be integer (type)'
    });
    expect(structuredOutput('{"verdict": "reject", "score": 1}', check)).toEqual({
      ok: true,
      value: { verdict: 'reject', score: 1 }
    });
  });
});
