// Every kind of transcript event the union names is documented: in the OpenAPI document (a schema
// per kind with its fields) and in the transcript's `kind` description, so a reader of the API
// learns each kind from the document and a kind added to the union cannot stay undocumented.
import { describe, expect, it } from '@jest/globals';
import { EVENT_KINDS, isEventKind, otherKind } from '../../src/api/events.js';
import { openApiDocument } from '../../src/api/openapi.js';

interface Schema {
  title?: string;
  description?: string;
  properties?: Record<string, Schema & { const?: unknown }>;
  required?: string[];
  anyOf?: Schema[];
}

const document = openApiDocument() as { components: { schemas: Record<string, Schema> } };
const schemas = document.components.schemas;
const perKind = new Map(
  (schemas.TranscriptEventKinds?.anyOf ?? []).map(schema => [schema.properties?.kind?.const, schema])
);

describe('transcript event kinds', () => {
  it('are each named once', () => {
    expect(new Set(EVENT_KINDS).size).toBe(EVENT_KINDS.length);
  });

  it.each([...EVENT_KINDS])('%s has its own schema in the OpenAPI document, every field described', kind => {
    const schema = perKind.get(kind);
    expect(schema).toBeDefined();
    expect(schema!.description).toMatch(/\w/);
    expect(schema!.required).toEqual(expect.arrayContaining(['seq', 'at', 'kind']));
    const fields = Object.entries(schema!.properties ?? {}).filter(
      ([name]) => !['seq', 'at', 'kind'].includes(name)
    );
    expect(fields.length).toBeGreaterThan(0);
    for (const [name, field] of fields)
      expect([name, field.description]).toEqual([name, expect.stringMatching(/\w/)]);
  });

  it('the document has a schema for no other kind', () => {
    expect([...perKind.keys()].sort()).toEqual([...EVENT_KINDS].sort());
  });

  it('are each named in the description of a transcript event', () => {
    const kind = schemas.Transcript?.properties?.events as unknown as { items: Schema };
    const described = kind.items.properties?.kind?.description ?? '';
    for (const name of EVENT_KINDS) expect(described).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it('a kind from a newer writer is not known, and the default of a switch hands it back whole', () => {
    expect(isEventKind('tool_call')).toBe(false);
    expect(isEventKind('diff')).toBe(true);
    const newer = { seq: 3, kind: 'tool_call', output: 'x' };
    expect(otherKind(newer as never)).toBe(newer);
  });
});
