// Durations as people write them in workflows: `90s`, `45m`, `1h30m`, `2h`.

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000 } as const;

/** Parses `1h30m`-style durations into milliseconds; returns undefined when the text is not one. */
export function parseDuration(text: string): number | undefined {
  const value = text.trim().toLowerCase();
  if (!/^(\d+h)?(\d+m)?(\d+s)?$/.test(value) || value === '') return undefined;
  let total = 0;
  for (const [, amount, unit] of value.matchAll(/(\d+)([hms])/g)) {
    total += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return total;
}

/** `3725000` → `1h2m5s`; `65000` → `1m5s`; `900` → `0s`. */
export function formatDuration(ms: number): string {
  let seconds = Math.max(0, Math.round(ms / 1000));
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  let text = '';
  if (hours) text += `${hours}h`;
  if (minutes) text += `${minutes}m`;
  if (seconds || text === '') text += `${seconds}s`;
  return text;
}
