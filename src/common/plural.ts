// Counts in messages: "1 child run", "2 child runs", never "1 child runs".

/** The count and its noun, the noun plural (its `plural`, else with an s) unless the count is one. */
export function counted(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}
