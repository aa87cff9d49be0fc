/**
 * X9: {@link GroupListResult} from the rows of the one statement each
 * dialect runs for `inspect.groupList` (`k, running, waiting, walked`: one
 * row per group walked or running; `walked` 1 for a group of the ready
 * walk): the busiest groups first, and whether the figures are exact.
 */
import { GROUP_COUNT_CAP, GROUP_WALK, type GroupEntry, type GroupListResult } from "../inspect-store.js";
import type { Row } from "./job-rows.js";

/** The default {@link GroupListParams.limit}. */
export const GROUP_LIST_LIMIT = 5;

/** The `limit` busiest of `rows` (most running plus waiting, then by name), complete when neither cap was reached. */
export function groupListFromRows(rows: readonly Row[], limit: number): GroupListResult {
  const groups = rows.map((r): GroupEntry => ({ group: String(r.k), running: Number(r.running), waiting: Number(r.waiting) }));
  const walked = rows.filter((r) => Number(r.walked) === 1).length;
  const complete = walked < GROUP_WALK && groups.every((g) => g.waiting < GROUP_COUNT_CAP);
  groups.sort((a, b) => b.running + b.waiting - (a.running + a.waiting) || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
  return { groups: groups.slice(0, limit), complete };
}
