// "Did you mean": the known word nearest to a mistyped one, for the messages that refuse an unknown
// option, configuration key or value. Near means a few edits (a letter left out, swapped or extra).

/** Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`. */
function distance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/** The candidate nearest to `word` when it is near enough to be a typing slip, else undefined. */
export function closestWord(word: string, candidates: readonly string[]): string | undefined {
  // Words are short; a long one (a pasted value) is no slip, and its cost stays bounded.
  if (word.length === 0 || word.length > 64) return undefined;
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(lower, candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  const allowed = Math.max(1, Math.floor(Math.max(word.length, 3) / 4));
  return best !== undefined && best !== word && bestDistance <= allowed ? best : undefined;
}

/** `; did you mean X?` for a near candidate, else the empty string. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const near = closestWord(word, candidates);
  return near === undefined ? '' : `; did you mean ${near}?`;
}
