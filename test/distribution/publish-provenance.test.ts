/**
 * publish.yml's signing and provenance wiring, read with GitHub's own workflow parser: the TUF
 * secret reaches one step of the publish job; attestation permissions belong to the attest job
 * alone, whose action is pinned by commit SHA and attests the subjects the publish job computed.
 */
import { describe, expect, it } from "vitest";
import { type Plain, readWorkflow } from "../support/workflow-file.ts";

const { doc, errors } = readWorkflow("publish.yml");
const expression = (expr: string) => ["$", "{{ ", expr, " }}"].join("");

describe("publish.yml: signing and build provenance", () => {
  it("parses without errors", () => {
    expect(errors).toEqual([]);
  });

  it("signs in the publish job with the online keys secret, read by the signing step only", () => {
    const steps: Plain[] = doc.jobs.publish.steps;
    const users = steps.filter((s) => JSON.stringify(s).includes("SVC_TUF_ONLINE_KEYS"));
    expect(users.map((s) => s.id)).toEqual(["sign"]);
    const sign = users[0];
    expect(sign.env.SVC_TUF_ONLINE_KEYS).toBe(expression("secrets.SVC_TUF_ONLINE_KEYS"));
    expect(sign.run).toContain("keys sign --if-due");
    const signAt = steps.indexOf(sign);
    const pagesAt = steps.findIndex((s) => String(s.uses).startsWith("actions/upload-pages-artifact@"));
    expect(signAt).toBeLessThan(pagesAt);
    expect(doc.jobs.publish.outputs.deploy).toContain("steps.sign.outputs.deploy");
  });

  it("attests every stored artifact in a job that alone holds id-token and attestations write", () => {
    const attest = doc.jobs.attest;
    expect(attest.needs).toBe("publish");
    expect(attest.permissions).toEqual({ "id-token": "write", attestations: "write" });
    const step = attest.steps.find((s: Plain) =>
      String(s.uses).startsWith("actions/attest-build-provenance@"),
    );
    expect(step.uses).toMatch(/^actions\/attest-build-provenance@[0-9a-f]{40}$/);
    expect(step.with["subject-checksums"]).toContain("provenance-subjects.txt");
    for (const [name, job] of Object.entries(doc.jobs) as Array<[string, Plain]>) {
      if (name === "attest") continue;
      expect(job.permissions?.attestations, name).toBeUndefined();
    }
    const subjects = doc.jobs.publish.steps.find((s: Plain) => s.id === "subjects");
    expect(subjects.run).toContain("keys subjects");
  });
});
