// One backend object shared by a server, a publisher and openLogs(): each that opened it is one
// user, and the backend closes when the last of them closes, in whatever order they close.
// Closing one never breaks the others (closing openLogs() once closed the backend a publisher still
// used: "the SQLite backend is not open").
import { describe, expect, it } from "vitest";
import { openBackendsNow } from "@later/runtime/testing";
import { JobsBuilder, openJobsPublisher, openLogs } from "../codegen/schemas/events.generated.js";
import { BACKENDS, withDatabase } from "./backends.js";

type User = "server" | "publisher" | "logs";
const ORDERS: User[][] = [
  ["server", "publisher", "logs"],
  ["server", "logs", "publisher"],
  ["publisher", "server", "logs"],
  ["publisher", "logs", "server"],
  ["logs", "server", "publisher"],
  ["logs", "publisher", "server"],
];

describe.each(BACKENDS)("a backend shared on $name", (entry) => {
  it("stays open until its last user closes, whatever the order; each user works until then", async () => {
    await withDatabase(entry, async (db) => {
      let n = 0;
      for (const order of ORDERS) {
        const backend = db.backend();
        const server = await new JobsBuilder({ context: {}, backend, autoMigrate: true, workerCount: 1 }).withShipOrderHandler(() => undefined).build();
        const publisher = await openJobsPublisher({ backend });
        const logs = await openLogs({ backend });
        const open: Record<User, boolean> = { server: true, publisher: true, logs: true };
        const use = async (user: User) => {
          const order = { orderId: `o${n++}`, customerId: "c", kind: "placed" as const, at: new Date(0), lines: [] };
          if (user === "server") await server.jobs.shipOrder.enqueueToPartition(order);
          if (user === "publisher") await publisher.jobs.shipOrder.enqueueToPartition(order);
          if (user === "logs") await logs.auditTrail.append({ actor: "a", action: "b" }, { partition: 0 });
        };
        const close = (user: User) => (user === "server" ? server.shutdown({ deadlineMs: 0 }) : user === "publisher" ? publisher.close() : logs.close());
        for (const [i, user] of order.entries()) {
          await close(user);
          open[user] = false;
          if (i < order.length - 1) {
            expect(openBackendsNow().has(backend), `open after closing ${order.slice(0, i + 1).join(", ")}`).toBe(true);
            for (const other of order) if (open[other]) await use(other);
          }
        }
        expect(openBackendsNow().has(backend), `closed after ${order.join(", ")}`).toBe(false);
        // Closing again changes nothing (each close is given back once).
        await Promise.all([publisher.close(), logs.close(), server.shutdown()]);
      }
    });
  });

  it("a backend used by one publisher only is closed by its close, as before", async () => {
    await withDatabase(entry, async (db) => {
      const backend = db.backend();
      const server = await new JobsBuilder({ context: {}, backend: db.backend(), autoMigrate: true }).withShipOrderHandler(() => undefined).build();
      await server.shutdown();
      const publisher = await openJobsPublisher({ backend });
      expect(openBackendsNow().has(backend)).toBe(true);
      await publisher.close();
      expect(openBackendsNow().has(backend)).toBe(false);
    });
  });
});
