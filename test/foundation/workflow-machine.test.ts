import { describe, expect, it } from "vitest";
import { availableActions, STATES, TRANSITIONS, transition } from "../../src/workflow/machine.ts";

/** The contract's transition table, verbatim. */
const CONTRACT = [
  ["draft", "modder", "uploaded"],
  ["uploaded", "system", "validating"],
  ["validating", "system", "validation_failed"],
  ["validating", "system", "pending_review"],
  ["validation_failed", "modder", "cancelled"],
  ["pending_review", "moderator", "changes_requested"],
  ["pending_review", "moderator", "rejected"],
  ["pending_review", "moderator", "approved"],
  ["approved", "system", "published"],
  ["published", "moderator", "hidden"],
  ["published", "system", "superseded"],
];

describe("submission state machine", () => {
  it("has the 12 states with the contract's visibility flags", () => {
    expect(STATES.map((s) => s.id)).toHaveLength(12);
    const visible = STATES.filter((s) => s.publicCatalogVisible).map((s) => s.id);
    const downloadable = STATES.filter((s) => s.downloadEnabled).map((s) => s.id);
    expect(visible).toEqual(["published", "superseded"]);
    expect(downloadable).toEqual(["published", "superseded"]);
  });

  it("carries every transition of the contract, marked as such", () => {
    const contract = TRANSITIONS.filter((t) => t.source === "contract").map((t) => [t.from, t.actor, t.to]);
    expect(contract).toEqual(CONTRACT);
  });

  it("maps each moderation decision to its target state", () => {
    expect(transition("pending_review", "approve", "moderator")).toMatchObject({ ok: true, to: "approved" });
    expect(transition("pending_review", "reject", "moderator")).toMatchObject({ ok: true, to: "rejected" });
    expect(transition("pending_review", "request_changes", "moderator")).toMatchObject({
      ok: true,
      to: "changes_requested",
    });
    expect(transition("published", "hide", "moderator")).toMatchObject({ ok: true, to: "hidden" });
    expect(transition("superseded", "hide", "moderator")).toMatchObject({ ok: true, to: "hidden" });
    expect(transition("hidden", "unhide", "moderator")).toMatchObject({ ok: true, to: "published" });
    expect(transition("hidden", "unhide", "moderator", { unhideTo: "superseded" })).toMatchObject({
      ok: true,
      to: "superseded",
    });
  });

  it("lets a modder cancel a draft, uploaded or failed submission, never an approved one", () => {
    for (const from of ["draft", "uploaded", "validation_failed", "changes_requested"] as const) {
      expect(transition(from, "cancel", "modder")).toMatchObject({ ok: true, to: "cancelled" });
    }
    for (const from of ["approved", "published", "validating", "pending_review"] as const) {
      expect(transition(from, "cancel", "modder")).toMatchObject({
        ok: false,
        code: "illegal_transition",
        from,
      });
    }
  });

  it("returns a typed illegal_transition for moves the table does not allow", () => {
    expect(transition("rejected", "approve", "moderator")).toEqual({
      ok: false,
      code: "illegal_transition",
      from: "rejected",
      action: "approve",
      message: "a moderator cannot approve a submission in state rejected",
    });
    // The right move by the wrong actor is still illegal.
    expect(transition("pending_review", "approve", "modder").ok).toBe(false);
    expect(transition("approved", "publish", "moderator").ok).toBe(false);
  });

  it("keeps terminal states terminal and offers resubmission after changes are requested", () => {
    expect(availableActions("cancelled", "modder")).toEqual([]);
    expect(availableActions("rejected", "moderator")).toEqual([]);
    expect(availableActions("changes_requested", "modder").sort()).toEqual(["cancel", "resubmit"]);
  });
});
