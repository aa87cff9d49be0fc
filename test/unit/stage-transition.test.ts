/**
 * The core table of legal stage changes (X13 in docs/semantics.md,
 * `core/stage-transition.ts`): every stage is reachable from an insert,
 * every unfinished stage can finish, terminal stages are left only from
 * outside (retry, delete, expiry, truncation), the wake-up rule, and
 * cancel's transitions (X3).
 */
import { describe, expect, it } from "vitest";
import { CLAIMABLE_STAGES, JOB_STAGES, type JobStage, TERMINAL_STAGES } from "../../packages/runtime/src/core/job-stage.js";
import {
  illegalStep,
  isLegalTransition,
  STAGE_TRANSITIONS,
  TRANSITION_KINDS,
  type TransitionKind,
  WAKING_STAGES,
  wakesByPartition,
  wakingStages,
} from "../../packages/runtime/src/core/stage-transition.js";

/** Stages reachable from `start` (null: an insert) through the table. */
function reachable(start: JobStage | null): Set<JobStage> {
  const seen = new Set<JobStage>();
  const queue: (JobStage | null)[] = [start];
  while (queue.length > 0) {
    const from = queue.shift()!;
    for (const to of JOB_STAGES) {
      if (!seen.has(to) && isLegalTransition(from, to)) {
        seen.add(to);
        queue.push(to);
      }
    }
  }
  return seen;
}

describe("STAGE_TRANSITIONS", () => {
  it("names only known stages, and every kind moves a row somewhere", () => {
    for (const kind of TRANSITION_KINDS) {
      const t = STAGE_TRANSITIONS[kind];
      for (const s of [...(t.from ?? []), ...(t.to ?? [])]) expect(JOB_STAGES).toContain(s);
      expect(t.from !== null || t.to !== null).toBe(true);
    }
  });

  it("reaches every stage from an insert", () => {
    expect([...reachable(null)].sort()).toEqual([...JOB_STAGES].sort());
  });

  it("lets every unfinished stage reach a terminal one", () => {
    for (const s of JOB_STAGES.filter((x) => !TERMINAL_STAGES.includes(x))) {
      expect(TERMINAL_STAGES.some((t) => reachable(s).has(t))).toBe(true);
    }
  });

  it("leaves terminal stages only from outside (retry, delete, expire, truncate) or by a success's own discard (J11)", () => {
    const exits = TRANSITION_KINDS.filter((k) => TERMINAL_STAGES.some((s) => (STAGE_TRANSITIONS[k].from as readonly JobStage[] | null)?.includes(s)));
    expect(exits.sort()).toEqual(["delete", "discard", "expire", "retry", "truncate"].sort() as TransitionKind[]);
  });

  it("only inserts create a row and only delete, discard, expire and truncate remove one", () => {
    expect(TRANSITION_KINDS.filter((k) => STAGE_TRANSITIONS[k].from === null)).toEqual(["insert"]);
    expect(TRANSITION_KINDS.filter((k) => STAGE_TRANSITIONS[k].to === null).sort()).toEqual(["delete", "discard", "expire", "truncate"]);
  });

  it("wakes exactly when a kind can enter a claimable stage, or (cancel's) lets a partition go on", () => {
    expect([...WAKING_STAGES]).toEqual([...CLAIMABLE_STAGES]);
    const byPartition: TransitionKind[] = ["cancel", "cancelChild"];
    for (const kind of TRANSITION_KINDS) {
      const t = STAGE_TRANSITIONS[kind];
      const wakes = byPartition.includes(kind) ? "partition" : (t.to ?? []).some((s) => WAKING_STAGES.includes(s));
      expect({ kind, wakes: t.wakes }).toEqual({ kind, wakes });
    }
    expect(wakingStages(["succeed", "requeue", "fail", "rescue"])).toEqual(["requeued"]);
    expect(wakingStages(["insert"])).toEqual(["enqueued", "delayed"]);
    expect(wakingStages(["claim", "succeed", "failChild"])).toEqual([]);
    expect(wakingStages(["replace"])).toEqual(["enqueued", "delayed"]);
    expect(wakingStages(["cancel", "cancelChild"])).toEqual([]);
    expect([wakesByPartition(["cancel", "cancelChild"]), wakesByPartition(["cancelChild"]), wakesByPartition(["forceFail", "retry"])]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it("cancels every unfinished stage, a waiting continuation down the chain, and stores a continuation of a cancelled parent cancelled", () => {
    for (const s of JOB_STAGES.filter((x) => !TERMINAL_STAGES.includes(x))) expect(isLegalTransition(s, "cancelled")).toBe(true);
    for (const s of TERMINAL_STAGES) expect({ s, legal: isLegalTransition(s, "cancelled") }).toEqual({ s, legal: false });
    expect(STAGE_TRANSITIONS.cancelChild).toMatchObject({ from: ["waiting"], to: ["cancelled"] });
    expect(isLegalTransition(null, "cancelled")).toBe(true);
    expect(isLegalTransition("cancelled", "enqueued")).toBe(true); // retry (X7)
    expect(isLegalTransition("cancelled", null)).toBe(true); // delete, expire, truncate
  });
});

describe("illegalStep", () => {
  it("accepts the histories the backends write", () => {
    expect(illegalStep(["enqueued", "running", "success"])).toBeNull();
    expect(illegalStep(["delayed", "running", "requeued", "running", "failed", "enqueued", "running", "success"])).toBeNull();
    expect(illegalStep(["waiting", "enqueued", "running", "enqueued"])).toBeNull(); // released, claimed, put back at shutdown
    expect(illegalStep(["waiting", "failed"])).toBeNull();
    expect(illegalStep(["failed"])).toBeNull(); // a continuation of a parent that already failed (J5)
    expect(illegalStep(["delayed", "enqueued", "running", "success"])).toBeNull(); // X2: a replace made a delayed job due
    expect(illegalStep(["delayed", "running", "cancelled", "enqueued", "running", "success"])).toBeNull(); // cancelled while running, retried
    expect(illegalStep(["waiting", "cancelled"])).toBeNull(); // a continuation of a cancelled job
    expect(illegalStep(["cancelled"])).toBeNull(); // enqueued under a parent already cancelled
  });

  it("finds the first illegal step", () => {
    expect(illegalStep(["running"])).toEqual({ from: null, to: "running" });
    expect(illegalStep(["enqueued", "success"])).toEqual({ from: "enqueued", to: "success" });
    expect(illegalStep(["enqueued", "running", "success", "running"])).toEqual({ from: "success", to: "running" });
    expect(illegalStep(["waiting", "running"])).toEqual({ from: "waiting", to: "running" });
    expect(illegalStep(["enqueued", "running", "success", "cancelled"])).toEqual({ from: "success", to: "cancelled" });
  });
});
