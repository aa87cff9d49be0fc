/** `2025-01-02T03:04:05Z`: UTC, to the second. `-` for no time. */
export function formatTime(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return "-";
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `+850ms`, `+12.3s`, `+4m05s`, `+2h10m`, `+3d04h`: the time from one stage change to the next. */
export function formatDuration(ms: number): string {
  if (ms < 0) return `-${formatDuration(-ms).slice(1)}`;
  if (ms < 1_000) return `+${Math.round(ms)}ms`;
  if (ms < 60_000) return `+${(ms / 1_000).toFixed(1)}s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `+${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `+${Math.floor(s / 3_600)}h${pad(Math.floor(s / 60) % 60)}m`;
  return `+${Math.floor(s / 86_400)}d${pad(Math.floor(s / 3_600) % 24)}h`;
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}
