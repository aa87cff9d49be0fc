import { Command, InvalidArgumentError, Option } from "commander";
import type { Backend, LogRecordRow } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { UsageError } from "./usage-error.js";
import { openLog, requireLogTopic, withLogOptions, type LogOptions } from "./open-log.js";

/** Records `tail` prints per partition without `--from`. */
export const TAIL_DEFAULT_LAST = 10;
/** How often `tail --follow` asks the database for new records, ms. */
export const TAIL_POLL_MS = 250;
/** Records read per statement. */
const BATCH = 1_000;

interface LogTailOptions extends LogOptions {
  partition?: number;
  from?: number;
  follow?: boolean;
  limit?: number;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * `later log tail <topic> [--partition P] [--from N] [--follow] [--limit N] [--json]`.
 *
 * Reads the topic's partitions (or only `--partition P`) in partition
 * order. Without `--from`, each partition from its last
 * {@link TAIL_DEFAULT_LAST} records; with `--from N`, each from offset N
 * (`--from 0`: from the beginning; an N below a partition's oldest
 * retained offset exits 1 naming it, as `RetainedLog.read` does). Without
 * `--follow` it stops at each partition's end; with it, it polls every
 * {@link TAIL_POLL_MS} ms for records appended since, until SIGINT or
 * SIGTERM, and exits 0. `--limit N` stops after N records in all.
 *
 * One record a line: `PARTITION OFFSET TIMESTAMP KEY VALUE`, two spaces
 * apart; the timestamp in UTC ISO form to the millisecond, the key `-` when
 * none; the value as UTF-8 text when it is valid UTF-8 without control
 * characters (so a line is always one record), else `base64:` and its
 * base64. `--json` prints one JSON object a line: `{ topic, partition,
 * offset, timestamp (ms), key, value, encoding: "utf8" | "base64",
 * headers }`.
 */
export function logTailCommand(context: CommandContext): Command {
  const tail = new Command("tail").description("print a log topic's records, one a line (default: the last 10 of each partition)");
  return withLogOptions(tail)
    .argument("<topic>", "the log topic")
    .addOption(new Option("--partition <p>", "only this partition").argParser(parseNonNegative))
    .addOption(new Option("--from <offset>", "start at this offset in each partition (0: the beginning)").argParser(parseNonNegative))
    .option("--follow", "keep printing records as they are appended, until SIGINT or SIGTERM")
    .addOption(new Option("--limit <n>", "stop after this many records").argParser(parsePositive))
    .option("--json", "print one JSON object a line (timestamp in ms since the epoch)")
    .action((topic: string, options: LogTailOptions) =>
      openLog(options, async (backend) => {
        const stored = await requireLogTopic(backend, topic);
        if (options.partition !== undefined && options.partition >= stored.partitions) {
          throw new UsageError(`--partition must be from 0 to ${stored.partitions - 1} (log topic "${topic}" has ${stored.partitions})`);
        }
        const positions = new Map<number, number>();
        for (const p of stored.partitionOffsets) {
          if (options.partition !== undefined && p.partition !== options.partition) continue;
          positions.set(p.partition, options.from ?? Math.max(p.startOffset, p.endOffset - TAIL_DEFAULT_LAST));
        }
        const stop = options.follow ? stopSignal() : undefined;
        try {
          await tailRecords(backend, topic, positions, options, context, stop);
        } finally {
          stop?.dispose();
        }
      }),
    );
}

async function tailRecords(
  backend: Backend,
  topic: string,
  positions: Map<number, number>,
  options: LogTailOptions,
  context: CommandContext,
  stop: StopSignal | undefined,
): Promise<void> {
  let left = options.limit ?? Number.POSITIVE_INFINITY;
  for (;;) {
    for (const [partition, from] of positions) {
      let offset = from;
      for (;;) {
        if (left <= 0 || stop?.stopped) return;
        const rows = await backend.log.recordRead({ topic, partition, fromOffset: offset, limit: Math.min(BATCH, left) });
        for (const row of rows) context.io.out(options.json ? jsonLine(topic, partition, row) : textLine(partition, row));
        left -= rows.length;
        if (rows.length > 0) offset = rows.at(-1)!.offset + 1;
        if (rows.length < BATCH) break;
      }
      positions.set(partition, offset);
    }
    if (!stop || left <= 0) return;
    if (await stop.wait(TAIL_POLL_MS)) return;
  }
}

function textLine(partition: number, row: LogRecordRow): string {
  const key = row.key === null ? "-" : oneLine(row.key);
  const { value, encoding } = decodeValue(row.value);
  return [partition, row.offset, new Date(row.timestamp).toISOString(), key, encoding === "base64" ? `base64:${value}` : value].join("  ");
}

function jsonLine(topic: string, partition: number, row: LogRecordRow): string {
  const headers = row.headers === null ? {} : (JSON.parse(row.headers) as Record<string, string>);
  return JSON.stringify({ topic, partition, offset: row.offset, timestamp: row.timestamp, key: row.key, ...decodeValue(row.value), headers });
}

/** UTF-8 text when the bytes are valid UTF-8 without control characters, else base64. */
function decodeValue(bytes: Uint8Array): { value: string; encoding: "utf8" | "base64" } {
  try {
    const text = utf8.decode(bytes);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
    if (!/[\u0000-\u001f\u007f]/.test(text)) return { value: text, encoding: "utf8" };
  } catch {
    // not UTF-8: base64 below
  }
  return { value: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"), encoding: "base64" };
}

function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
  return text.replace(/[\u0000-\u001f\u007f]/g, " ");
}

/** A non-negative integer option (`--from`, `--partition`). */
export function parseNonNegative(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError("expected a non-negative integer");
  return n;
}

function parsePositive(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

/** SIGINT/SIGTERM as a flag and a wait that ends early on either; `dispose` restores the default handling. */
interface StopSignal {
  readonly stopped: boolean;
  /** Resolves to true when stopped (now or during the wait), false after `ms`. */
  wait(ms: number): Promise<boolean>;
  dispose(): void;
}

function stopSignal(): StopSignal {
  let stopped = false;
  let wake: (() => void) | undefined;
  const onSignal = () => {
    stopped = true;
    wake?.();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    get stopped() {
      return stopped;
    },
    wait(ms) {
      if (stopped) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve(stopped);
        }, ms);
        wake = () => {
          clearTimeout(timer);
          wake = undefined;
          resolve(true);
        };
      });
    },
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
