// Plain text tables for both command lines (`agent-run list`, `agent-executor environments list`):
// one helper so both line up the same way, without tabs that wrap unevenly in a terminal.

/** A plain text table: columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map(row => (row[i] ?? '').length)));
  const format = (row: string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [format(header), ...rows.map(format)].join('\n');
}
