/** How the page writes ids, times, durations and sizes. */

/**
 * The last 6 characters of an id: ids are ULIDs, whose leading characters
 * are the time they were made, so ids made close together differ at the end.
 */
export function shortId(id: string): string {
  return id.length <= 6 ? id : id.slice(-6);
}

/** A duration: "840 ms", "12.3 s", "4 m 05 s", "3 h 02 m", "2 d 04 h". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const s = ms / 1_000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const pad = (n: number) => String(Math.floor(n)).padStart(2, "0");
  if (s < 3_600) return `${Math.floor(s / 60)} m ${pad(s % 60)} s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)} h ${pad((s % 3_600) / 60)} m`;
  return `${Math.floor(s / 86_400)} d ${pad((s % 86_400) / 3_600)} h`;
}

/** Bytes in binary units ("12.4 MiB"); a dash when unknown. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** A count with thousands separators. */
export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? "–" : n.toLocaleString("en-US");
}

/** A time of day in the browser's zone ("14:03:07"), with the date when it is not today. */
export function formatTime(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined) return "–";
  const d = new Date(ms);
  const time = d.toLocaleTimeString("en-GB", { hour12: false });
  return new Date(now).toDateString() === d.toDateString() ? time : `${d.toISOString().slice(0, 10)} ${time}`;
}

/** The full time, for tooltips. */
export function formatIso(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "" : new Date(ms).toISOString();
}

/** "3 s ago", "in 2 m 10 s". */
export function formatRelative(ms: number, now = Date.now()): string {
  const delta = ms - now;
  if (Math.abs(delta) < 1_000) return "now";
  return delta < 0 ? `${formatDuration(-delta)} ago` : `in ${formatDuration(delta)}`;
}
