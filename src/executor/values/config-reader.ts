// Typed reads of a parsed YAML config that record a problem (key, value, expected form) instead of
// throwing, so that one start-up names every mistake at once. Its own module because the agent
// kinds read their own keys of `agent:` with it, and config.ts reads the agent kinds.

import { didYouMean, showValue } from '../../api/index.js';
import { parseDuration } from '../../common/duration.js';

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Units a size may carry: binary ones (KiB = 1024 B), as disks and `du` count. */
const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4
};

/** A value as it appears in a message (the one describer of src/api). */
export const show = showValue;

/** The longest path a message shows whole: a user must see which folder or program is meant. */
export const MAX_SHOWN_PATH = 4096;

/** A path the user gave, as it appears in a message: whole, up to MAX_SHOWN_PATH characters. */
export const showPath = (path: string): string => showValue(path, MAX_SHOWN_PATH);

export class ConfigReader {
  constructor(readonly problems: string[]) {}

  object(value: unknown, at: string): Record<string, unknown> {
    if (value === undefined || value === null) return {};
    if (typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    this.problems.push(`${at || 'the file'} ${show(value)}: expected a mapping of keys to values`);
    return {};
  }

  known(object: Record<string, unknown>, at: string, keys: string[]): void {
    for (const key of Object.keys(object)) {
      if (!keys.includes(key)) {
        this.problems.push(
          `${at ? `${at}.` : ''}${key}: unknown key; expected one of ${keys.join(', ')}${didYouMean(key, keys)}`
        );
      }
    }
  }

  string(value: unknown, at: string, fallback: string): string {
    if (value === undefined || value === null) {
      if (fallback === '') this.problems.push(`${at}: required, expected a string`);
      return fallback;
    }
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
    if (typeof value === 'number') return String(value);
    this.problems.push(`${at} ${show(value)}: expected a non-empty string`);
    return fallback;
  }

  strings(value: unknown, at: string): string[] {
    if (value === undefined || value === null) return [];
    if (Array.isArray(value) && value.every(item => typeof item === 'string' || typeof item === 'number')) {
      return value.map(String);
    }
    this.problems.push(`${at} ${show(value)}: expected a list of strings`);
    return [];
  }

  int(value: unknown, at: string, fallback: number, min: number, max: number): number {
    if (value === undefined || value === null) return fallback;
    if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
    this.problems.push(`${at} ${show(value)}: expected a whole number from ${min} to ${max}`);
    return fallback;
  }

  duration(value: unknown, at: string, fallback: number, zeroAllowed = false): number {
    if (value === undefined || value === null) return fallback;
    const ms = String(value).trim() === '0' ? 0 : parseDuration(String(value));
    // Node timers hold at most 2^31-1 ms (about 24.8 days).
    if (ms !== undefined && (ms > 0 || zeroAllowed) && ms <= MAX_TIMER_MS) return ms;
    this.problems.push(
      `${at} ${show(value)}: expected a duration such as 90s, 30m or 1h30m, at most 24 days`
    );
    return fallback;
  }

  /**
   * A size in binary units. Decimal ones (KB, MB, GB, TB) are refused rather than guessed: `2GB`
   * means 2·10⁹ bytes to some readers and 2 GiB to others, and a quota should not be a guess.
   */
  size(value: unknown, at: string, fallback: number): number {
    if (value === undefined || value === null) return fallback;
    const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$/.exec(String(value).trim());
    const unit = (match?.[2] || 'B').toLowerCase();
    const decimal = /^([kmgt])b$/.exec(unit);
    if (match && decimal) {
      const binary = `${decimal[1]!.toUpperCase()}iB`;
      this.problems.push(
        `${at} ${show(value)}: ${match[2]} is a decimal unit, which sizes here do not take; ` +
          `write ${match[1]}${binary} (binary units: KiB, MiB, GiB, TiB)`
      );
      return fallback;
    }
    if (match && SIZE_UNITS[unit] !== undefined) {
      const bytes = Math.round(Number(match[1]) * SIZE_UNITS[unit]!);
      if (bytes > 0) return bytes;
    }
    this.problems.push(`${at} ${show(value)}: expected a size such as 500MiB or 2GiB`);
    return fallback;
  }

  /** true or false; anything else is a problem and the fallback. */
  boolean(value: unknown, at: string, fallback: boolean): boolean {
    if (value === undefined || value === null) return fallback;
    if (typeof value === 'boolean') return value;
    this.problems.push(`${at} ${show(value)}: expected true or false`);
    return fallback;
  }

  oneOf<T extends string>(value: unknown, at: string, options: readonly T[], fallback: T): T {
    if (value === undefined || value === null) return fallback;
    if (options.includes(value as T)) return value as T;
    this.problems.push(
      `${at} ${show(value)}: expected one of ${options.join(', ')}${typeof value === 'string' ? didYouMean(value, options) : ''}`
    );
    return fallback;
  }

  url(value: unknown, at: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    try {
      const url = new URL(String(value));
      if (url.protocol === 'http:' || url.protocol === 'https:') return url.href.replace(/\/+$/, '');
    } catch {
      // reported below
    }
    this.problems.push(`${at} ${show(value)}: expected an http(s) URL such as https://agents.example.com`);
    return undefined;
  }
}
