/**
 * Numbers the workers of one server for `worker_id` labels: the smallest
 * number not in use, so the labels stay few (at most the workers running
 * at once) however often workers come and go. The worker pool takes one per
 * worker slot, the partition runner one per running chain of heads.
 */
export class WorkerIds {
  private readonly used = new Set<number>();

  /** The smallest free number, from 1; now in use. */
  take(): number {
    let id = 1;
    while (this.used.has(id)) id++;
    this.used.add(id);
    return id;
  }

  /** Frees `id` for the next {@link take}. */
  release(id: number): void {
    this.used.delete(id);
  }
}
