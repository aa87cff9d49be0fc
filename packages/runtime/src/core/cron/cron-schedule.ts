/**
 * Recurring schedules: a six-field cron expression (seconds first) in an IANA
 * time zone, parsed once and asked for its next occurrence after an instant.
 *
 * Occurrences are computed by the npm package cron-parser (5.x); this module
 * adds what later needs on top: the field count is fixed at six, every error
 * is an `InvalidCronError` naming the field or zone at fault, and the time
 * is always passed in, never read from the wall clock, so schedules are
 * tested with a manual clock.
 */
import { CronExpressionParser } from "cron-parser";
import { InvalidArgumentError, InvalidCronError } from "../../errors.js";

/** The six fields, in order, as error messages name them ("cron hour field"). */
const FIELD_NAMES = ["seconds", "minutes", "hour", "day-of-month", "month", "day-of-week"] as const;

/** cron-parser refuses longer expressions; checked first so messages stay short. */
const MAX_EXPRESSION_LENGTH = 1024;

/** Instants a JavaScript `Date` can hold: ±8.64e15 ms around the epoch. */
const MAX_DATE_MS = 8.64e15;

/**
 * A parsed cron schedule: `sec min hour day-of-month month day-of-week`,
 * evaluated in `timeZone`.
 *
 * Syntax (cron-parser's): numbers, ranges `1-5`, lists `1,3,5`, steps `*\/15`
 * and `10-40/10`, `*` and `?` (any), month names `jan`–`dec`, day names
 * `sun`–`sat` (0 and 7 are both Sunday), `L` (last day of the month, or `5L`
 * for the last Friday) and `1#2` (second Monday). When both day-of-month and
 * day-of-week are restricted, a day matching either fires (classic cron).
 * Jenkins-style `H` is refused: cron-parser seeds it from `Math.random`, so two
 * servers would disagree on when the job runs.
 *
 * Time zones: fields are wall-clock times in `timeZone`, so `0 0 9 * * *` in
 * `Europe/Paris` fires at 08:00 UTC in winter and 07:00 UTC in summer. On a
 * spring-forward day a time inside the skipped hour fires once, an hour
 * later on the wall clock (02:30 becomes 03:30); on a fall-back day a fixed
 * time in the repeated hour fires once, at its first occurrence, while an
 * hourly or finer schedule fires in both copies of the hour.
 *
 * Immutable and pure: `nextAfter` depends only on its argument.
 */
export class CronSchedule {
  /** The expression as given to {@link CronSchedule.parse}, untrimmed. */
  readonly expression: string;
  /** The IANA time zone as given to {@link CronSchedule.parse} (default `"UTC"`). */
  readonly timeZone: string;

  private constructor(expression: string, timeZone: string) {
    this.expression = expression;
    this.timeZone = timeZone;
  }

  /**
   * Parses `expression` for `timeZone` (default `"UTC"`, so a schedule means
   * the same thing whatever the host's zone).
   *
   * Exactly six whitespace-separated fields, seconds first, are required: a
   * classic five-field expression is refused rather than guessed at, since
   * cron-parser would silently read it as seconds `0`, and a seven-field
   * (Quartz, with year) one too. Aliases such as `@daily` are refused for the
   * same reason: write `0 0 0 * * *`.
   *
   * Throws `InvalidCronError`:
   * - field `cron`: not a string, longer than 1024 characters (cron-parser's
   *   limit), or not six fields;
   * - field `cron <name> field` (`seconds`, `minutes`, `hour`,
   *   `day-of-month`, `month`, `day-of-week`): that field does not parse or is
   *   out of range, or (day-of-month) names a day no listed month has, such
   *   as `30 2` (Feb 30), so the schedule could never fire;
   * - field `time zone`: not a zone name both `Intl.DateTimeFormat` and
   *   cron-parser accept (e.g. `"Europe/Paris"`, `"UTC"`; not `"UTC+3"`).
   */
  static parse(expression: string, timeZone = "UTC"): CronSchedule {
    if (typeof expression !== "string") {
      throw new InvalidCronError("cron", `expected a string of 6 fields, seconds first, got ${describe(expression)}`);
    }
    if (expression.length > MAX_EXPRESSION_LENGTH) {
      throw new InvalidCronError("cron", `expression is ${expression.length} characters long; cron-parser accepts at most ${MAX_EXPRESSION_LENGTH}`);
    }
    const fields = expression.trim() === "" ? [] : expression.trim().split(/\s+/);
    if (fields.length !== 6) {
      throw new InvalidCronError(
        "cron",
        `${JSON.stringify(expression)} has ${fields.length} field${fields.length === 1 ? "" : "s"}; later needs 6 fields, seconds first ` +
          `(sec min hour day-of-month month day-of-week), e.g. "0 */5 * * * *" for every 5 minutes` +
          (fields.length === 5 ? `: put the seconds in front of a 5-field crontab line, e.g. "0 ${fields.join(" ")}"` : ""),
      );
    }
    for (const [index, field] of fields.entries()) checkField(expression, field, index);
    checkTimeZone(timeZone);
    try {
      CronExpressionParser.parse(expression, { tz: timeZone, currentDate: 0 });
    } catch (error) {
      // Every field parsed alone, so the combination is at fault: cron-parser
      // refuses a day of month that none of the listed months has (Feb 30).
      const reason = `${JSON.stringify(expression)}: ${messageOf(error)}`;
      if (/day of month/i.test(messageOf(error))) {
        throw new InvalidCronError("cron day-of-month field", `day ${fields[3]} does not occur in month ${fields[4]} (${reason})`);
      }
      throw new InvalidCronError("cron", reason);
    }
    return new CronSchedule(expression, timeZone);
  }

  /**
   * The first occurrence strictly after `ms` (epoch milliseconds), as epoch
   * milliseconds: an instant exactly on an occurrence gets the next one, so a
   * scheduler that feeds each result back in never fires twice. Occurrences
   * fall on whole seconds; a fractional `ms` is fine.
   *
   * Throws `InvalidArgumentError` when `ms` is not a finite number within the
   * range of a `Date`, and `InvalidCronError` (field `cron`) when cron-parser
   * finds no occurrence within its search limit. `parse` already refuses a
   * day no listed month has, so in practice that means an `ms` so close to
   * the end of the `Date` range that the next occurrence would lie past it.
   */
  nextAfter(ms: number): number {
    if (typeof ms !== "number" || !Number.isFinite(ms) || Math.abs(ms) > MAX_DATE_MS) {
      throw new InvalidArgumentError(`nextAfter needs epoch milliseconds as a finite number within ±8.64e15, got ${String(ms)}`);
    }
    // Occurrences are whole seconds, so the first one after floor(ms) is the
    // first one after ms; flooring keeps negative fractions from rounding up.
    const from = Math.floor(ms);
    try {
      return CronExpressionParser.parse(this.expression, { tz: this.timeZone, currentDate: from }).next().getTime();
    } catch (error) {
      throw new InvalidCronError(
        "cron",
        `${JSON.stringify(this.expression)} in ${this.timeZone} has no occurrence that can be found after ${isoOrNumber(from)} (${messageOf(error)})`,
      );
    }
  }

  /** `"<expression>" in <time zone>`, for logs and error messages. */
  toString(): string {
    return `${JSON.stringify(this.expression)} in ${this.timeZone}`;
  }
}

/**
 * Parses one field alone, every other field `*`, so an error names its
 * field: cron-parser's own messages ("Constraint error, got value 24
 * expected range 0-23") do not say which field they are about.
 */
function checkField(expression: string, field: string, index: number): void {
  const name = `cron ${FIELD_NAMES[index]} field`;
  // Month and day names are replaced before `H` is expanded, so "thu" is a
  // day, not a hash: look for H only outside three-letter names.
  const withoutNames = index >= 4 ? field.replace(/[a-z]{3}/gi, "") : field;
  if (withoutNames.includes("H")) {
    throw new InvalidCronError(
      name,
      `${JSON.stringify(field)} in ${JSON.stringify(expression)} uses H (hashed values), which later does not support: cron-parser picks H at random per process, so servers would disagree; write the value out`,
    );
  }
  const probe = ["*", "*", "*", "*", "*", "*"];
  probe[index] = field;
  try {
    CronExpressionParser.parse(probe.join(" "), { tz: "UTC", currentDate: 0 });
  } catch (error) {
    throw new InvalidCronError(name, `${JSON.stringify(field)} in ${JSON.stringify(expression)}: ${messageOf(error)}`);
  }
}

/**
 * A zone must pass `Intl.DateTimeFormat` (IANA names, `"UTC"`) and
 * cron-parser: cron-parser alone reports a bad zone only when asked for an
 * occurrence, as "CronDate: unhandled timestamp", and accepts forms such as
 * `"UTC+3"` that `Intl` does not.
 */
function checkTimeZone(timeZone: string): void {
  if (typeof timeZone !== "string" || timeZone === "") {
    throw new InvalidCronError("time zone", `expected an IANA time zone name such as "Europe/Paris" or "UTC", got ${describe(timeZone)}`);
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    CronExpressionParser.parse("0 0 0 * * *", { tz: timeZone, currentDate: 0 }).next();
  } catch {
    throw new InvalidCronError(
      "time zone",
      `${JSON.stringify(timeZone)} is not a known IANA time zone; use a name such as "Europe/Paris", "America/New_York" or "UTC"`,
    );
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  return typeof value;
}

function isoOrNumber(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}
