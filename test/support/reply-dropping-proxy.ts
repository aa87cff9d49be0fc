/**
 * A TCP proxy between a backend and PostgreSQL that, once armed, cuts the
 * connection on which the client next sends a given text (`"COMMIT"`, or a
 * statement's text) right after the server has done it: the server's
 * replies to it (CommandComplete, then ReadyForQuery) are withheld, and at
 * the ReadyForQuery both sockets are destroyed. The client sees its
 * connection lost while the statement had committed: the case a retry must
 * not turn into a second copy. Once only per arming.
 *
 * Server messages are parsed by the protocol's framing (one type byte, a
 * 32-bit length including itself); the client's bytes are only searched for
 * the text (a plain connection: no TLS is asked for on 127.0.0.1).
 */
import { createServer, connect, type Server, type Socket } from "node:net";

export class ReplyDroppingProxy {
  /** How many connections were cut. */
  dropped = 0;
  private armed: string | null = null;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on 127.0.0.1 (a free port) and forwards every connection to `host:port`. */
  static async start(target: { host: string; port: number }): Promise<ReplyDroppingProxy> {
    let proxy: ReplyDroppingProxy | null = null;
    const server = createServer((client) => proxy!.forward(client, target));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    proxy = new ReplyDroppingProxy(server, address.port);
    return proxy;
  }

  /** Cuts the next connection that sends `text`, once its reply is complete (see the module doc). */
  dropReplyTo(text: string): void {
    this.armed = text;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(client: Socket, target: { host: string; port: number }): void {
    const upstream = connect(target.port, target.host);
    this.sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    let sent = ""; // the client's latest bytes, as latin1, to find the armed text across chunks
    let cutting = false;
    client.on("data", (chunk: Buffer) => {
      if (this.armed !== null && !cutting) {
        sent = (sent + chunk.toString("latin1")).slice(-(this.armed.length + chunk.length));
        if (sent.includes(this.armed)) {
          this.armed = null;
          cutting = true;
        }
      }
      upstream.write(chunk);
    });
    let pending = Buffer.alloc(0);
    upstream.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      let forwardable = 0;
      while (pending.length - forwardable >= 5) {
        const length = pending.readInt32BE(forwardable + 1);
        if (pending.length - forwardable < 1 + length) break;
        const type = String.fromCharCode(pending[forwardable]!);
        if (cutting && type === "Z") {
          // The statement's reply is complete: withhold it and cut the connection.
          this.dropped++;
          end();
          return;
        }
        forwardable += 1 + length;
      }
      if (cutting) return; // withhold the reply until its ReadyForQuery
      client.write(pending.subarray(0, forwardable));
      pending = pending.subarray(forwardable);
    });
  }
}
