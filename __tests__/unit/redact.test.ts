// A run's secrets are removed from what its CLI prints in one pass over each string (redact.ts):
// every occurrence of every secret goes, however many there are, and where occurrences overlap or
// one lies inside another, no piece of either is left.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { REDACTED, secretRedactor } from '../../src/executor/agents/harness/redact.js';

describe('secretRedactor', () => {
  it('removes each of 35,000 secrets wherever it appears, and leaves other text alone', () => {
    const secrets = Array.from({ length: 35_000 }, (_, i) => `tok-${i.toString(36).padStart(6, '0')}-x`);
    const redact = secretRedactor(secrets);
    const line = `a ${secrets[0]} b ${secrets[34_999]}${secrets[17_000]} c tok-zzzzzz-y ${secrets[123]}`;
    expect(redact(line)).toBe(`a ${REDACTED} b ${REDACTED}${REDACTED} c tok-zzzzzz-y ${REDACTED}`);
    expect(redact('nothing secret here')).toBe('nothing secret here');
  });

  it('takes the longest: a secret inside another goes whole, as one mark', () => {
    const redact = secretRedactor(['abc12345', 'xyzabc12345678', '12345678']);
    expect(redact('<xyzabc12345678>')).toBe(`<${REDACTED}>`);
    expect(redact('<abc12345>')).toBe(`<${REDACTED}>`);
    expect(redact('<abc123456789>')).toBe(`<${REDACTED}9>`);
  });

  it('leaves no piece of overlapping secrets: their union is hidden', () => {
    const redact = secretRedactor(['xxabcdef', 'abcdefgh12']);
    // Longest first, one after another, would leave "xx" of the first secret beside the mark.
    expect(redact('[xxabcdefgh12]')).toBe(`[${REDACTED}]`);
    // A secret that ends after several marks swallows them all.
    const chain = secretRedactor(['aaaa1111', '2222bbbb', 'Z-aaaa1111-2222bbbb-Z']);
    expect(chain('Z-aaaa1111-2222bbbb-Z!')).toBe(`${REDACTED}!`);
    expect(chain('aaaa1111-2222bbbb')).toBe(`${REDACTED}-${REDACTED}`);
  });

  it('keeps two touching secrets as two marks, and repeated ones each', () => {
    const redact = secretRedactor(['secret-one', 'secret-two']);
    expect(redact('secret-onesecret-two secret-one')).toBe(`${REDACTED}${REDACTED} ${REDACTED}`);
  });

  it('handles secrets with characters a regular expression would read (and none at all)', () => {
    const redact = secretRedactor(['a.b*c+d?(e)[f]$^|\\', '"quoted\nline"', 'ünïcødé-🔑-key']);
    expect(redact('x a.b*c+d?(e)[f]$^|\\ y "quoted\nline" z ünïcødé-🔑-key')).toBe(
      `x ${REDACTED} y ${REDACTED} z ${REDACTED}`
    );
    expect(secretRedactor([])('unchanged')).toBe('unchanged');
  });

  it('never leaves a secret in what it returns, for any text and any secrets', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', '1');
    const secret = fc.string({ unit: alphabet, minLength: 2, maxLength: 6 });
    fc.assert(
      fc.property(
        fc.array(secret, { minLength: 1, maxLength: 8 }),
        fc.string({ unit: alphabet, maxLength: 60 }),
        (secrets, text) => {
          const out = secretRedactor(secrets)(text);
          // The mark's own letters are outside the alphabet, so a secret found in the result is one left behind.
          for (const value of secrets)
            expect(out.split(REDACTED).some(part => part.includes(value))).toBe(false);
          // Without the marks, what is left is text that was there, in order.
          expect(out.replace(/\[redacted\]/g, '').length).toBeLessThan(text.length + 1);
        }
      )
    );
  });
});
