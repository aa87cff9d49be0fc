/** A column of {@link formatTable}: its title and how a row shows in it. */
export interface TableColumn<T> {
  title: string;
  value(row: T): string;
  /** Numbers line up on the right. */
  right?: boolean;
}

/**
 * The CLI's text tables (`jobs list`, `recurring list`, `partitions list`):
 * a header and one line per row, in the order given, each column padded to
 * its widest cell, two spaces between columns, no trailing spaces. Control
 * characters in a cell (a newline in a job type) become spaces, so a row is
 * always one line.
 */
export function formatTable<T>(columns: readonly TableColumn<T>[], rows: readonly T[]): string[] {
  const cells = rows.map((row) => columns.map((c) => oneLine(c.value(row))));
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (columns[i]!.right ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.title)), ...cells.map(line)];
}

function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
  return text.replace(/[\u0000-\u001f\u007f]/g, " ");
}
