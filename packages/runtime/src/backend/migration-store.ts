/**
 * The migrations part of the seam (`backend.migrations`): numbered,
 * forward-only migrations per dialect, recorded in `later_migrations`.
 */

/** The migrations of one backend's database (not scoped to a namespace: every namespace shares the tables). */
export interface MigrationStore {
  /** Applied and pending migrations. */
  status(): Promise<MigrationStatusResult>;
  /** Applies pending migrations; safe when several processes run it at once. */
  up(): Promise<MigrationUpResult>;
}

export interface MigrationStatusResult {
  /** Highest applied migration, 0 for an empty database. */
  current: number;
  /** Highest migration this release ships. */
  latest: number;
  applied: { version: number; name: string; appliedAt: number }[];
  pending: { version: number; name: string }[];
}

export interface MigrationUpResult {
  applied: { version: number; name: string }[];
  current: number;
}
