// Rules about values that the client, the action and the executor must agree on: what a valid
// Idempotency-Key is, and how an error message shows a value it refuses: safely (never a long
// value in full, so a secret pasted into the wrong field is not echoed), bounded and quoted.

/** A valid `Idempotency-Key`: 1–255 printable ASCII characters, no spaces. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** The form of a valid key, for error messages. */
export const IDEMPOTENCY_KEY_FORM = '1–255 printable ASCII characters without spaces';

export function isValidIdempotencyKey(value: unknown): value is string {
  return typeof value === 'string' && IDEMPOTENCY_KEY_PATTERN.test(value);
}

/**
 * A value as it appears inline in a message (`timeout "forever": expected …`): its JSON text,
 * cut to `max` characters with an ellipsis; `nothing` when there is none.
 */
export function showValue(value: unknown, max = 60): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string')
    return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * A value as the end of a sentence (`expected a string, got …`): its kind, and for strings and
 * scalars the value itself: `nothing`, `null`, `an array`, `an object`, `number 5`, `the string "x"`.
 */
export function describeValue(value: unknown, max = 60): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${showValue(value, max)}`;
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}

/** A run id or artifact uid as one URL path segment: letters, digits and `-_.:~`, not only dots. */
export const ID_SEGMENT_PATTERN = /^(?!\.+$)[A-Za-z0-9._:~-]{1,200}$/;
/** The form of an id, for error messages. */
export const ID_SEGMENT_FORM = '1–200 letters, digits or -_.:~ (not . or ..)';

export function isIdSegment(value: unknown): value is string {
  return typeof value === 'string' && ID_SEGMENT_PATTERN.test(value);
}
