/** X5: the `parentId` option's parents: one id, or the distinct ids of an array, sorted; bad lists refused naming `parentId`. */
import { describe, expect, it } from "vitest";
import { LaterError } from "../../packages/runtime/src/errors.js";
import { MAX_PARENTS, parentsOf } from "../../packages/runtime/src/publisher/enqueue-options.js";

describe("parentsOf (X5)", () => {
  it("keeps one id, folds repeats, sorts, and turns one distinct id into a single parent", () => {
    expect(parentsOf("b")).toEqual({ parentId: "b" });
    expect(parentsOf(["c", "a", "c", "b"])).toEqual({ parentIds: ["a", "b", "c"] });
    expect(parentsOf(["a", "a"])).toEqual({ parentId: "a" });
    expect(parentsOf(["a"])).toEqual({ parentId: "a" });
    expect(parentsOf(Array.from({ length: MAX_PARENTS }, (_, i) => `id${i}`))).toHaveProperty("parentIds.length", MAX_PARENTS);
  });

  it.each([
    ["an empty array", []],
    ["more than 1,000 ids", Array.from({ length: MAX_PARENTS + 1 }, () => "a")],
    ["a non-string id", ["a", 7]],
    ["an empty id", ["a", ""]],
    ["an empty string", ""],
    ["a number", 5],
  ])("refuses %s with INVALID_ARGUMENT naming parentId", (_, value) => {
    let error: unknown;
    try {
      parentsOf(value, "enqueue");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LaterError);
    expect((error as LaterError).code).toBe("INVALID_ARGUMENT");
    expect((error as LaterError).message).toContain("parentId");
  });
});
