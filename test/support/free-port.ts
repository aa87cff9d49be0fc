/**
 * A TCP port on 127.0.0.1 that nothing listens on now, for a server a test
 * starts (a throwaway PostgreSQL cluster, a PgBouncer).
 *
 * Picked at random below Linux's ephemeral range (32768 and up), where the
 * kernel never hands ports to outgoing connections: a server stopped for a
 * while (an outage test) can then listen on the same port again.
 */
import { createServer } from "node:net";

const LOW = 15_000;
const HIGH = 32_000;

function tryListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A free port in [15000, 32000); throws after 50 ports in use. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await tryListen(port)) return port;
  }
  throw new Error(`no free port found in [${LOW}, ${HIGH}) after 50 tries`);
}
