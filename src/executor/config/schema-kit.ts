// The vocabulary the configuration's schema (schema.ts) is written in, and the walk that reads a
// mapping by it. A key is one TypeBox schema of its value as parsed, so the parsed configuration's
// type is the schema's Static type; the schema's `config` option holds the rest of what is known of
// the key: its YAML name, a one-line description, the form, default and range the reference shows,
// and how its raw value is read with the ConfigReader (whose messages name the key, the value and
// the expected form, with a did-you-mean for unknown keys and choices).

import Type, {
  type TArray,
  type TBoolean,
  type TInteger,
  type TObject,
  type TOptional,
  type TProperties,
  type TSchema,
  type TString,
  type TUnsafe
} from 'typebox';
import { formatDuration } from '../../common/duration.js';
import type { ConfigReader } from '../values/config-reader.js';

/** What a key's reader is handed besides its raw value and its path. */
export interface ReadContext {
  r: ConfigReader;
  /** The config file's folder: relative paths are resolved from it. */
  base: string;
  /** The raw mapping the key is in (a key read with another, as image_pull with image). */
  raw: Record<string, unknown>;
  /** The keys of the same mapping read before this one, by property name. */
  done: Record<string, unknown>;
  /** The top level's keys read so far, by property name (an environment's default reads workers). */
  root: Record<string, unknown>;
}

/** Reads one key's raw value (undefined when absent), pushing problems to the reader. */
export type Read = (value: unknown, at: string, ctx: ReadContext) => unknown;

/** What the schema knows of a key besides the type of its parsed value. */
export interface KeyInfo {
  /** Its name in agent-executor.yaml. */
  key: string;
  /** One line for the reference. */
  doc: string;
  /** The form of its value, as the reference shows it. */
  form: string;
  /** Its default as the reference shows it; absent: none. */
  fallback?: string;
  range?: string;
  /** How it is read; absent on keys another room reads (sandbox/config.ts). */
  read?: Read;
  /** A mapping read key by key by this walk (its `properties` are its keys). */
  section?: boolean;
  /** A section whose keys the parsed value holds in its parent (`server.host` is `host`). */
  flat?: boolean;
  /** A section that may also be true (all defaults) or false (none); absent: none either. */
  toggle?: boolean;
  /** Keys of the same mapping this entry reads besides its own (image_pull with image). */
  also?: KeyInfo[];
  /** The mapping the value, or each item of its list, holds: for the reference only. */
  inner?: TObject;
  /** Whether `inner` is the form of each item of a list. */
  list?: boolean;
  /** Rows the reference shows for keys another room reads and declares no schema of (agent kinds). */
  more?: KeyInfo[];
}

/** The key annotations of a schema made here (or by hand, as sandbox/config.ts does). */
export function infoOf(schema: TSchema): KeyInfo {
  const info = (schema as { config?: KeyInfo }).config;
  if (!info) throw new Error('a configuration schema without its key annotations');
  return info;
}

/** The YAML names of a mapping's keys, in order: what `known` accepts. */
export function keysOf(schema: TObject): string[] {
  return Object.values(schema.properties).flatMap(property => {
    const info = infoOf(property);
    return [info.key, ...(info.also ?? []).map(also => also.key)];
  });
}

/** The options that attach `info` (and the JSON Schema keywords given) to a schema. */
type Extra = Partial<KeyInfo>;

/** A whole number from `min` to `max`. */
export function int(
  key: string,
  doc: string,
  fallback: number,
  min: number,
  max: number,
  extra: Extra = {}
): TInteger {
  const read: Read = (value, at, { r }) => r.int(value, at, fallback, min, max);
  const info = { key, doc, form: 'a whole number', fallback: String(fallback), range: `${min} to ${max}` };
  return Type.Integer({ minimum: min, maximum: max, config: { ...info, read, ...extra } });
}

/** A duration such as 90s or 1h30m, in ms; `zero`: 0 is allowed. */
export function duration(
  key: string,
  doc: string,
  fallback: number,
  zero = false,
  extra: Extra = {}
): TInteger {
  const read: Read = (value, at, { r }) => r.duration(value, at, fallback, zero);
  const range = zero ? '0s to 24 days' : 'above 0s, at most 24 days';
  const info = { key, doc, form: 'a duration (90s, 30m, 1h30m)', fallback: formatDuration(fallback), range };
  return Type.Integer({ config: { ...info, read, ...extra } });
}

/** A size in binary units such as 500MiB, in bytes. */
export function size(key: string, doc: string, fallback: number, extra: Extra = {}): TInteger {
  const read: Read = (value, at, { r }) => r.size(value, at, fallback);
  const info = { key, doc, form: 'a size (KiB, MiB, GiB, TiB)', fallback: formatSize(fallback) };
  return Type.Integer({ config: { ...info, read, ...extra } });
}

/** A non-empty string; `fallback` '' makes it required. */
export function text(key: string, doc: string, fallback: string, extra: Extra = {}): TString {
  const read: Read = (value, at, { r }) => r.string(value, at, fallback);
  const info = { key, doc, form: 'a string', ...(fallback === '' ? {} : { fallback }) };
  return Type.String({ config: { ...info, read, ...extra } });
}

/** One of `options`. */
export function choice<const T extends string>(
  key: string,
  doc: string,
  options: readonly T[],
  fallback: T,
  extra: Extra = {}
): TUnsafe<T> {
  const read: Read = (value, at, { r }) => r.oneOf(value, at, options, fallback);
  const info = { key, doc, form: `one of ${options.join(', ')}`, fallback };
  return Type.Unsafe<T>({ enum: [...options], config: { ...info, read, ...extra } });
}

/** true or false. */
export function flag(key: string, doc: string, fallback = false, extra: Extra = {}): TBoolean {
  const read: Read = (value, at, { r }) => r.boolean(value, at, fallback);
  return Type.Boolean({
    config: { key, doc, form: 'true or false', fallback: String(fallback), read, ...extra }
  });
}

/** A list of strings. */
export function list(key: string, doc: string, extra: Extra = {}): TArray<TString> {
  const read: Read = (value, at, { r }) => r.strings(value, at);
  return Type.Array(Type.String(), {
    config: { key, doc, form: 'a list of strings', fallback: '[]', read, ...extra }
  });
}

/** An http(s) URL, without its trailing slash; unset when absent. */
export function link(key: string, doc: string, extra: Extra = {}): TOptional<TString> {
  const read: Read = (value, at, { r }) => r.url(value, at);
  return Type.Optional(Type.String({ config: { key, doc, form: 'an http(s) URL', read, ...extra } }));
}

/** A key of its own form, read by `read`, whose parsed value is a T. */
export function custom<T>(key: string, doc: string, form: string, read: Read, extra: Extra = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ config: { key, doc, form, read, ...extra } });
}

/** A mapping of the keys `properties` declares. */
export function section<P extends TProperties>(
  key: string,
  doc: string,
  properties: P,
  extra: Extra = {}
): TObject<P> {
  const form = extra.toggle ? 'true, false or a mapping' : 'a mapping';
  return Type.Object(properties, { config: { key, doc, form, section: true, ...extra } });
}

/** `bytes` in the largest binary unit that holds it whole: 1073741824 → 1GiB. */
export function formatSize(bytes: number): string {
  const units = ['TiB', 'GiB', 'MiB', 'KiB'];
  for (const [index, unit] of units.entries()) {
    const scale = 1024 ** (units.length - index);
    if (bytes % scale === 0) return `${bytes / scale}${unit}`;
  }
  return `${bytes}B`;
}

/** Each mapping of a section as found in the file, its own and its sections' (first pass). */
interface Shape {
  /** Absent: a toggle section turned off (or not given). */
  object?: Record<string, unknown>;
  inner: Map<string, Shape>;
}

/** `key` of the mapping at `at` as a path: `limits.transcript`, or `workers` at the top. */
export function pathOf(at: string, key: string): string {
  return at ? `${at}.${key}` : key;
}

/**
 * Reads the mapping `value` by `schema`: first that it and each of its sections is a mapping of
 * known keys (so a misspelt key is named before what it was meant to set), then each key in order.
 */
export function readMapping(
  schema: TObject,
  value: unknown,
  at: string,
  ctx: Pick<ReadContext, 'r' | 'base'> & { root?: Record<string, unknown> }
): Record<string, unknown> | undefined {
  const shape = shapeOf(schema, value, at, ctx.r);
  const done: Record<string, unknown> = {};
  return valuesOf(schema, shape, at, { ...ctx, root: ctx.root ?? done, raw: {}, done });
}

/** The first pass: each mapping is one, and holds only the keys its schema declares. */
function shapeOf(schema: TObject, value: unknown, at: string, r: ConfigReader): Shape {
  const info = (schema as { config?: KeyInfo }).config;
  if (info?.toggle && (value === undefined || value === null || value === false)) return { inner: new Map() };
  const object = r.object(info?.toggle && value === true ? {} : value, at);
  r.known(object, at, keysOf(schema));
  const inner = new Map<string, Shape>();
  for (const [name, property] of Object.entries(schema.properties)) {
    const child = infoOf(property);
    if (child.section)
      inner.set(name, shapeOf(property as TObject, object[child.key], pathOf(at, child.key), r));
  }
  return { object, inner };
}

/** The second pass: each key read in order into `ctx.done`, a section by the same walk. */
function valuesOf(
  schema: TObject,
  shape: Shape,
  at: string,
  ctx: ReadContext
): Record<string, unknown> | undefined {
  const { object } = shape;
  if (!object) return undefined;
  for (const [name, property] of Object.entries(schema.properties)) {
    const info = infoOf(property);
    const path = pathOf(at, info.key);
    const inner = info.section ? { ...ctx, done: info.flat ? ctx.done : {} } : undefined;
    const value = inner
      ? valuesOf(property as TObject, shape.inner.get(name)!, path, inner)
      : info.read!(object[info.key], path, { ...ctx, raw: object });
    if (value !== undefined && !info.flat) ctx.done[name] = value;
  }
  return ctx.done;
}
