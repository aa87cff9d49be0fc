/**
 * `later partitions list` and the partition fields of `later jobs show`, on
 * every backend, against a database a real server is working on (the CLI
 * run as a child process, while a partition head's handler is held open);
 * and the label of an error kept from an attempt before a job succeeded.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BackgroundJobServer, RetryPolicy, topic } from "@later/runtime";
import type { PartitionListEntry } from "@later/runtime/internal";
import { BACKENDS, type TestDatabase } from "../conformance/backends.js";
import { deferred, waitFor } from "../conformance/harness.js";
import { later } from "./later-cli.js";

describe.each(BACKENDS)("later partitions and jobs show on $name", (entry) => {
  const dbs: TestDatabase[] = [];
  const servers: BackgroundJobServer<unknown>[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.shutdown({ deadlineMs: 0 })));
    await Promise.all(dbs.splice(0).map((d) => d.dispose()));
  });
  const fresh = async () => {
    const db = await entry.createDatabase();
    dbs.push(db);
    return { db, cli: ["--database", db.url, ...(db.schema ? ["--schema", db.schema] : []), "--namespace", "shop"] };
  };

  it("partitions list shows each partition's head, depth, owner and lease; jobs show prints topic, partition and sequence", async () => {
    const { db, cli } = await fresh();
    const started = deferred();
    const release = deferred();
    const server = await BackgroundJobServer.start({
      backend: db.backend("shop"),
      context: {},
      autoMigrate: true,
      workerCount: 1,
      topics: [topic("orders", 3), topic("emails", 1)],
      handlers: {
        processOrder: {
          handle: async () => {
            started.resolve();
            await release.promise;
          },
        },
      },
    });
    servers.push(server as BackgroundJobServer<unknown>);
    const target = { topic: "orders", partition: 1 };
    const head = await server.publisher.enqueueToPartition("processOrder", { n: 1 }, target);
    const second = await server.publisher.enqueueToPartition("processOrder", { n: 2 }, target);
    const third = await server.publisher.enqueueToPartition("processOrder", { n: 3 }, target);
    await started.promise; // the head is claimed: its partition lease is held by this server

    const listed = later(["partitions", "list", ...cli]);
    expect(listed.stderr).toBe("");
    expect(listed.status).toBe(0);
    const lines = listed.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^TOPIC +PARTITION +HEAD +DEPTH +OWNER +LEASE UNTIL$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^emails +0 +- +0 +- +-$/),
      expect.stringMatching(/^orders +0 +- +0 +- +-$/),
      expect.stringMatching(new RegExp(`^orders +1 {2}${head} +3 {2}${server.instanceId} {2}\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`)),
      expect.stringMatching(/^orders +2 +- +0 +- +-$/),
    ]);
    // Columns line up under their titles.
    const depthEnd = lines[0]!.indexOf("DEPTH") + "DEPTH".length;
    expect(lines[3]!.slice(depthEnd - 1, depthEnd)).toBe("3");

    const json = later(["partitions", "list", "--topic", "orders", "--json", ...cli]);
    expect(json.status).toBe(0);
    const entries = JSON.parse(json.stdout) as PartitionListEntry[];
    expect(entries.map((p) => p.partition)).toEqual([0, 1, 2]);
    expect(entries[1]).toMatchObject({ topic: "orders", partition: 1, headJobId: head, depth: 3, leaseOwner: server.instanceId });
    expect(entries[1]!.leaseExpiresAt).toBeGreaterThan(Date.now());
    expect(entries[0]).toEqual({ topic: "orders", partition: 0, headJobId: null, depth: 0, leaseOwner: null, leaseExpiresAt: null });

    const unknown = later(["partitions", "list", "--topic", "nope", ...cli]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr.trim()).toBe('later: no topic "nope" in namespace "shop" (its topics: emails, orders)');
    const otherNamespace = later(["partitions", "list", ...cli, "--namespace", "empty"]);
    expect(otherNamespace.stdout).toMatch(/^no topics in namespace "empty"/m);

    const shown = later(["jobs", "show", third, ...cli]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/^topic +orders$/m);
    expect(shown.stdout).toMatch(/^partition +1$/m);
    expect(shown.stdout).toMatch(/^sequence +3$/m);
    expect(JSON.parse(later(["jobs", "show", second, "--json", ...cli]).stdout)).toMatchObject({ topic: "orders", partition: 1, seq: 2 });

    release.resolve();
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: third }))?.stage === "success", "the partition to drain");
    const drained = JSON.parse(later(["partitions", "list", "--topic", "orders", "--json", ...cli]).stdout) as PartitionListEntry[];
    expect(drained[1]).toMatchObject({ headJobId: null, depth: 0 });
  });

  it("jobs show labels the error of an earlier attempt of a job that then succeeded; a plain job shows no partition", async () => {
    const { db, cli } = await fresh();
    let calls = 0;
    const server = await BackgroundJobServer.start({
      backend: db.backend("shop"),
      context: {},
      autoMigrate: true,
      workerCount: 1,
      pollIntervalMs: 20,
      handlers: {
        flaky: {
          retry: () => RetryPolicy.fixed(3, 0),
          handle: () => {
            calls++;
            if (calls < 3) throw new Error(`smtp timeout ${calls}`);
          },
        },
      },
    });
    servers.push(server as BackgroundJobServer<unknown>);
    const id = await server.publisher.enqueue("flaky", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id }))?.stage === "success", "the job to succeed on its third attempt");

    const shown = later(["jobs", "show", id, ...cli]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/^stage +success$/m);
    expect(shown.stdout).toMatch(/^attempt +3$/m);
    expect(shown.stdout).toMatch(/^earlier error +\(attempt 2, before the job succeeded\) smtp timeout 2$/m);
    expect(shown.stdout).not.toMatch(/^last error/m);
    expect(shown.stdout).toMatch(/^topic +- \(not partitioned\)$/m);
    expect(shown.stdout).toMatch(/^partition +-$/m);
    expect(shown.stdout).toMatch(/^sequence +-$/m);
  });
});
