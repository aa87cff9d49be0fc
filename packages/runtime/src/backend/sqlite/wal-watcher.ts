import { watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";

/**
 * Cross-process wake-ups for SQLite: every commit by any process appends to
 * the database's `-wal` file, and inotify (through `fs.watch` on the folder,
 * so the WAL file may come and go) reports it within a millisecond or so.
 * Listeners are called at most once per macrotask. A latency hint only:
 * workers still poll, so a missed event costs one poll interval.
 */
export class WalWatcher {
  private watcher: FSWatcher | null = null;
  private readonly listeners = new Set<() => void>();
  private scheduled = false;

  constructor(private readonly databaseFile: string) {}

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.watcher) this.start();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  private start(): void {
    const wal = `${basename(this.databaseFile)}-wal`;
    try {
      this.watcher = watch(dirname(this.databaseFile), { persistent: false }, (_event, file) => {
        if (file === wal) this.schedule();
      });
      this.watcher.on("error", () => this.stop());
    } catch {
      this.watcher = null; // no inotify here: polling alone finds the work
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      for (const listener of this.listeners) listener();
    });
  }
}
