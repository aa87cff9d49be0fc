import { describe, expect, it } from "vitest";
import { InvalidArgumentError, InvalidCronError } from "../../packages/runtime/src/errors.js";
import { CronSchedule } from "../../packages/runtime/src/core/cron/cron-schedule.js";

const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
/** The next `count` occurrences after `fromIso`, each fed back in as a scheduler would. */
const run = (schedule: CronSchedule, fromIso: string, count: number) => {
  const out: string[] = [];
  let at = utc(fromIso);
  for (let i = 0; i < count; i++) {
    at = schedule.nextAfter(at);
    out.push(iso(at));
  }
  return out;
};

function cronError(fn: () => unknown): InvalidCronError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidCronError);
    expect((error as InvalidCronError).code).toBe("INVALID_CRON");
    return error as InvalidCronError;
  }
  throw new Error("expected an InvalidCronError");
}

describe("CronSchedule.parse", () => {
  it("keeps the expression and zone as given, zone defaulting to UTC", () => {
    const s = CronSchedule.parse("0 */5 * * * *");
    expect(s.expression).toBe("0 */5 * * * *");
    expect(s.timeZone).toBe("UTC");
    const paris = CronSchedule.parse(" 0 0 9 * * * ", "Europe/Paris");
    expect(paris.expression).toBe(" 0 0 9 * * * ");
    expect(paris.timeZone).toBe("Europe/Paris");
    expect(paris.toString()).toBe('" 0 0 9 * * * " in Europe/Paris');
  });

  it("accepts the syntax cron-parser offers: lists, ranges, steps, names, L, #, ?", () => {
    for (const e of [
      "0,30 * * * * *",
      "0 0 9-17 * * 1-5",
      "0 10-40/10 * * * *",
      "0 0 0 1 jan,jul *",
      "0 0 0 * * MON-FRI",
      "0 0 0 L * *",
      "0 0 0 * * 5L",
      "0 0 0 * * 1#2",
      "0 0 0 ? * *",
      "0 0 0 * * 7",
    ]) {
      expect(() => CronSchedule.parse(e)).not.toThrow();
    }
  });

  it("requires 6 fields, seconds first: a classic 5-field line is refused, not guessed", () => {
    const error = cronError(() => CronSchedule.parse("*/5 * * * *"));
    expect(error.message).toMatch(/^invalid cron: /);
    expect(error.message).toMatch(/has 5 fields; later needs 6 fields, seconds first/);
    expect(error.message).toContain('"0 */5 * * * *"');
  });

  it.each([
    ["7 fields (Quartz with a year)", "0 0 0 1 1 * 2030", /has 7 fields/],
    ["1 field", "*", /has 1 field;/],
    ["an alias", "@daily", /has 1 field;/],
    ["nothing", "", /has 0 fields/],
    ["only spaces", "   ", /has 0 fields/],
  ])("refuses %s", (_what, expression, message) => {
    const error = cronError(() => CronSchedule.parse(expression));
    expect(error.message).toMatch(/^invalid cron: /);
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/6 fields, seconds first/);
  });

  it.each([
    ["a number", 5],
    ["null", null],
    ["undefined", undefined],
    ["an array", ["0", "*", "*", "*", "*", "*"]],
  ])("refuses %s as the expression", (_what, expression) => {
    expect(cronError(() => CronSchedule.parse(expression as never)).message).toMatch(/^invalid cron: expected a string/);
  });

  it("refuses an expression past cron-parser's 1024-character limit", () => {
    const long = `${"0,".repeat(600)}0 * * * * *`;
    expect(cronError(() => CronSchedule.parse(long)).message).toMatch(/^invalid cron: expression is \d+ characters long/);
  });

  it.each([
    ["seconds", "60 * * * * *", "60"],
    ["seconds", "x * * * * *", "x"],
    ["seconds", "*/0 * * * * *", "*/0"],
    ["seconds", "5-1 * * * * *", "5-1"],
    ["minutes", "0 60 * * * *", "60"],
    ["minutes", "0 1,,2 * * * *", "1,,2"],
    ["hour", "0 0 24 * * *", "24"],
    ["hour", "0 0 -1 * * *", "-1"],
    ["day-of-month", "0 0 0 32 * *", "32"],
    ["day-of-month", "0 0 0 0 * *", "0"],
    ["month", "0 0 0 * 13 *", "13"],
    ["month", "0 0 0 * foo *", "foo"],
    ["day-of-week", "0 0 0 * * 8", "8"],
    ["day-of-week", "0 0 0 * * 1#6", "1#6"],
    ["day-of-week", "0 0 0 * * xyz", "xyz"],
  ])("names the %s field when %j is bad", (field, expression, value) => {
    const error = cronError(() => CronSchedule.parse(expression));
    expect(error.message).toMatch(new RegExp(`^invalid cron ${field} field: `));
    expect(error.message).toContain(JSON.stringify(value));
    expect(error.message).toContain(JSON.stringify(expression));
  });

  it("refuses a day no listed month has (Feb 30) at parse time, naming the day-of-month field", () => {
    const error = cronError(() => CronSchedule.parse("0 0 0 30 2 *"));
    expect(error.message).toMatch(/^invalid cron day-of-month field: day 30 does not occur in month 2/);
    expect(cronError(() => CronSchedule.parse("0 0 0 31 2,4 *")).message).toMatch(/day-of-month field/);
    expect(() => CronSchedule.parse("0 0 0 29 2 *")).not.toThrow();
  });

  it("refuses H (hashed values), which cron-parser picks at random per process", () => {
    expect(cronError(() => CronSchedule.parse("H * * * * *")).message).toMatch(/^invalid cron seconds field: .*uses H/);
    expect(cronError(() => CronSchedule.parse("0 H(0-29) * * * *")).message).toMatch(/^invalid cron minutes field: .*uses H/);
    expect(cronError(() => CronSchedule.parse("0 0 0 * * H")).message).toMatch(/^invalid cron day-of-week field: .*uses H/);
    // "THU" and "thu" are day names, not hashes.
    expect(() => CronSchedule.parse("0 0 0 * * THU")).not.toThrow();
    expect(() => CronSchedule.parse("0 0 0 * * thu")).not.toThrow();
  });

  it.each([
    ["an unknown zone", "Not/AZone"],
    ["a misspelt zone", "Europe/Pariss"],
    ["a UTC offset form Intl does not know", "UTC+3"],
    ["an empty zone", ""],
  ])("refuses %s, naming it", (_what, zone) => {
    const error = cronError(() => CronSchedule.parse("0 0 9 * * *", zone));
    expect(error.message).toMatch(/^invalid time zone: /);
    expect(error.message).toContain(JSON.stringify(zone));
  });

  it("refuses a time zone that is not a string", () => {
    expect(cronError(() => CronSchedule.parse("0 0 9 * * *", 1 as never)).message).toMatch(/^invalid time zone: .*got number/);
    expect(cronError(() => CronSchedule.parse("0 0 9 * * *", null as never)).message).toMatch(/^invalid time zone: .*got null/);
  });

  it("checks the fields before the zone", () => {
    expect(cronError(() => CronSchedule.parse("0 0 24 * * *", "Not/AZone")).message).toMatch(/^invalid cron hour field/);
  });
});

describe("CronSchedule.nextAfter", () => {
  it("every second: the next whole second, strictly after", () => {
    const s = CronSchedule.parse("* * * * * *");
    const t = utc("2024-01-01T00:00:00.000Z");
    expect(s.nextAfter(t)).toBe(t + 1000);
    expect(s.nextAfter(t - 1)).toBe(t);
    expect(s.nextAfter(t + 1)).toBe(t + 1000);
    expect(s.nextAfter(t + 999)).toBe(t + 1000);
    expect(run(s, "2024-01-01T00:00:00.000Z", 3)).toEqual(["2024-01-01T00:00:01.000Z", "2024-01-01T00:00:02.000Z", "2024-01-01T00:00:03.000Z"]);
  });

  it("every 5 minutes", () => {
    const s = CronSchedule.parse("0 */5 * * * *");
    expect(iso(s.nextAfter(utc("2024-01-01T00:07:30.000Z")))).toBe("2024-01-01T00:10:00.000Z");
    expect(run(s, "2024-01-01T23:52:00.000Z", 3)).toEqual(["2024-01-01T23:55:00.000Z", "2024-01-02T00:00:00.000Z", "2024-01-02T00:05:00.000Z"]);
  });

  it("an instant exactly on an occurrence gets the next one", () => {
    const s = CronSchedule.parse("0 */5 * * * *");
    expect(iso(s.nextAfter(utc("2024-01-01T00:10:00.000Z")))).toBe("2024-01-01T00:15:00.000Z");
    expect(iso(s.nextAfter(utc("2024-01-01T00:09:59.999Z")))).toBe("2024-01-01T00:10:00.000Z");
    const monthly = CronSchedule.parse("0 0 0 1 * *");
    expect(iso(monthly.nextAfter(utc("2024-02-01T00:00:00.000Z")))).toBe("2024-03-01T00:00:00.000Z");
  });

  it("monthly, including days only some months have", () => {
    expect(run(CronSchedule.parse("0 0 0 1 * *"), "2024-01-15T12:00:00.000Z", 3)).toEqual([
      "2024-02-01T00:00:00.000Z",
      "2024-03-01T00:00:00.000Z",
      "2024-04-01T00:00:00.000Z",
    ]);
    expect(run(CronSchedule.parse("0 30 12 31 * *"), "2024-01-31T13:00:00.000Z", 3)).toEqual([
      "2024-03-31T12:30:00.000Z",
      "2024-05-31T12:30:00.000Z",
      "2024-07-31T12:30:00.000Z",
    ]);
    expect(run(CronSchedule.parse("0 0 0 L * *"), "2024-01-31T00:00:00.000Z", 2)).toEqual(["2024-02-29T00:00:00.000Z", "2024-03-31T00:00:00.000Z"]);
    expect(iso(CronSchedule.parse("0 0 0 29 2 *").nextAfter(utc("2024-03-01T00:00:00.000Z")))).toBe("2028-02-29T00:00:00.000Z");
  });

  it("fires on a day matching either day-of-month or day-of-week when both are set (classic cron)", () => {
    // The 13th or any Friday: Friday 2024-01-05 comes before the 13th.
    expect(iso(CronSchedule.parse("0 0 0 13 * 5").nextAfter(utc("2024-01-01T00:00:00.000Z")))).toBe("2024-01-05T00:00:00.000Z");
  });

  it("accepts fractional and negative instants", () => {
    const s = CronSchedule.parse("* * * * * *");
    expect(s.nextAfter(1000.5)).toBe(2000);
    expect(s.nextAfter(999.5)).toBe(1000);
    expect(s.nextAfter(-1000.5)).toBe(-1000);
    expect(s.nextAfter(-1000)).toBe(0);
  });

  it("does not depend on the host's time zone (UTC unless told)", () => {
    expect(iso(CronSchedule.parse("0 0 9 * * *").nextAfter(utc("2024-07-15T00:00:00.000Z")))).toBe("2024-07-15T09:00:00.000Z");
  });

  it("respects the zone: 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer", () => {
    const s = CronSchedule.parse("0 0 9 * * *", "Europe/Paris");
    expect(iso(s.nextAfter(utc("2024-01-15T00:00:00.000Z")))).toBe("2024-01-15T08:00:00.000Z");
    expect(iso(s.nextAfter(utc("2024-07-15T00:00:00.000Z")))).toBe("2024-07-15T07:00:00.000Z");
    // Across the spring-forward night (2024-03-31): 09:00 CET, then 09:00 CEST.
    expect(run(s, "2024-03-30T00:00:00.000Z", 2)).toEqual(["2024-03-30T08:00:00.000Z", "2024-03-31T07:00:00.000Z"]);
    // Across the fall-back night (2024-10-27): 09:00 CEST, then 09:00 CET.
    expect(run(s, "2024-10-26T00:00:00.000Z", 2)).toEqual(["2024-10-26T07:00:00.000Z", "2024-10-27T08:00:00.000Z"]);
  });

  it("respects other zones: New York and a half-hour zone", () => {
    const ny = CronSchedule.parse("0 0 9 * * *", "America/New_York");
    expect(iso(ny.nextAfter(utc("2024-01-15T00:00:00.000Z")))).toBe("2024-01-15T14:00:00.000Z");
    expect(iso(ny.nextAfter(utc("2024-07-15T00:00:00.000Z")))).toBe("2024-07-15T13:00:00.000Z");
    const kolkata = CronSchedule.parse("0 0 9 * * *", "Asia/Kolkata");
    expect(iso(kolkata.nextAfter(utc("2024-01-15T00:00:00.000Z")))).toBe("2024-01-15T03:30:00.000Z");
  });

  it("spring forward: a time in the skipped hour fires once, an hour later on the wall clock", () => {
    // Paris 2024-03-31: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist that day.
    const s = CronSchedule.parse("0 30 2 * * *", "Europe/Paris");
    expect(run(s, "2024-03-30T12:00:00.000Z", 2)).toEqual([
      "2024-03-31T01:30:00.000Z", // 03:30 CEST
      "2024-04-01T00:30:00.000Z", // 02:30 CEST
    ]);
    // An hourly schedule simply has no 02:00 that day.
    expect(run(CronSchedule.parse("0 0 * * * *", "Europe/Paris"), "2024-03-31T00:30:00.000Z", 2)).toEqual([
      "2024-03-31T01:00:00.000Z", // 03:00 CEST
      "2024-03-31T02:00:00.000Z", // 04:00 CEST
    ]);
  });

  it("fall back: a fixed time in the repeated hour fires once; hourly fires in both copies", () => {
    // Paris 2024-10-27: 03:00 CEST goes back to 02:00 CET, so 02:00–03:00 happens twice.
    expect(run(CronSchedule.parse("0 30 2 * * *", "Europe/Paris"), "2024-10-26T23:00:00.000Z", 2)).toEqual([
      "2024-10-27T00:30:00.000Z", // 02:30 CEST; not again at 02:30 CET
      "2024-10-28T01:30:00.000Z",
    ]);
    expect(run(CronSchedule.parse("0 0 * * * *", "Europe/Paris"), "2024-10-26T23:30:00.000Z", 4)).toEqual([
      "2024-10-27T00:00:00.000Z", // 02:00 CEST
      "2024-10-27T01:00:00.000Z", // 02:00 CET
      "2024-10-27T02:00:00.000Z", // 03:00 CET
      "2024-10-27T03:00:00.000Z",
    ]);
  });

  it("is pure: the same argument gives the same answer, in any order", () => {
    const s = CronSchedule.parse("0 0 9 * * *", "Europe/Paris");
    const a = s.nextAfter(utc("2024-07-15T00:00:00.000Z"));
    s.nextAfter(utc("2030-01-01T00:00:00.000Z"));
    expect(s.nextAfter(utc("2024-07-15T00:00:00.000Z"))).toBe(a);
  });

  it.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["beyond the Date range", 9e15],
    ["a string", "2024-01-01"],
    ["undefined", undefined],
  ])("refuses %s as the instant with InvalidArgumentError", (_what, ms) => {
    expect(() => CronSchedule.parse("* * * * * *").nextAfter(ms as never)).toThrow(InvalidArgumentError);
  });

  it("throws InvalidCronError when no occurrence can be found before the end of the Date range", () => {
    const s = CronSchedule.parse("0 0 0 1 1 *");
    expect(cronError(() => s.nextAfter(8.64e15 - 1000)).message).toMatch(/^invalid cron: .*has no occurrence that can be found after/);
  });
});
