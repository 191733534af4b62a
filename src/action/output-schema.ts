// The `output-schema` input: a JSON Schema given inline or as a .json file, compiled before any
// run exists (a schema that is not valid JSON Schema is an input error), and the request the
// prompt gets for an answer that ends with a matching JSON object.

import { showValue } from '../api/index.js';
import { SchemaError, compileSchema } from '../client/index.js';
import { type ReadFile, readInputFile } from './workspace-file.js';

export interface OutputSchema {
  schema: Record<string, unknown>;
  check: ReturnType<typeof compileSchema>;
}

/** The sentence (and schema) appended to the prompt when `output-schema` is set. */
export function schemaRequest(schema: Record<string, unknown>): string {
  return (
    '\n\nEnd your answer with one JSON object that matches this JSON Schema ' +
    '(a ```json block or a bare object, nothing after it):\n```json\n' +
    `${JSON.stringify(schema, null, 2)}\n\`\`\`\n`
  );
}

/** `output-schema`: inline JSON, or a path to a .json file relative to the workspace. */
export function readOutputSchema(
  getInput: (name: string) => string,
  env: NodeJS.ProcessEnv,
  readFile: ReadFile | undefined,
  problems: string[]
): OutputSchema | undefined {
  const raw = getInput('output-schema').trim();
  if (raw === '') return undefined;
  let text = raw;
  if (!raw.startsWith('{')) {
    if (!raw.toLowerCase().endsWith('.json')) {
      problems.push(
        `output-schema ${showValue(raw)}: expected a JSON Schema object (inline JSON) or the path of a .json file`
      );
      return undefined;
    }
    const read = readInputFile('output-schema', raw, env, readFile, problems);
    if (read === undefined) return undefined;
    text = read;
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    problems.push(
      `output-schema ${showValue(raw, 80)}: not valid JSON (${(error as Error).message}); expected a JSON Schema such as {"type": "object", "properties": {...}}`
    );
    return undefined;
  }
  try {
    const check = compileSchema(schema);
    return { schema: schema as Record<string, unknown>, check };
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    problems.push(`output-schema ${showValue(raw, 80)}: ${error.message}`);
    return undefined;
  }
}
