/**
 * How the PostgreSQL statements name one partition's jobs so that the
 * partition indexes (`later_jobs_partition_head`, `later_jobs_partition_done`)
 * serve them whatever the table's statistics say: as row-comparison ranges
 * over the (namespace, topic, partition) prefix, in the indexes' order.
 */
/**
 * The jobs of one partition (`j` the jobs alias; `ns`, `topic`, `partition`
 * SQL expressions), written so that a probe ordered by {@link partitionOrder}
 * goes through the partition indexes (`later_jobs_partition_head`,
 * `later_jobs_partition_done`) whatever the table's statistics say.
 *
 * Why not `namespace = … AND topic = … AND partition_no = …`: on a table
 * never analyzed, those equalities are estimated at 0.5 % each, so a
 * partition's jobs come out as one row, and every index whose leading
 * columns are (namespace, topic) costs the same for one row. The planner then
 * took `later_jobs_topic_list` (namespace, topic, id), one level shallower
 * than the head index when ids arrive in order and partitions do not, and
 * sorted the topic's every job, finished ones included, to find one head:
 * in `pnpm bench:partitions` (20,000 jobs written by `insertMany`, never
 * analyzed) each success-and-next-head took about 30 ms instead of 0.1 and
 * the ordered path ran at 135-240 jobs/s against 2,200 after `ANALYZE`.
 * As one range over the (namespace, topic, partition) prefix (the two row
 * comparisons hold together exactly when the three columns equal the
 * values; `topic IS NOT NULL` proves the partial indexes' predicate, which a
 * row comparison does not) it is estimated as a share of the table, a third
 * with no statistics, nearly all of a namespace with them, and then only an
 * index already in (namespace, topic, partition_no, seq) order answers an
 * `ORDER BY … LIMIT 1` without sorting that share.
 *
 * The price: PostgreSQL 15's B-tree checks the upper row comparison entry by
 * entry but ends the scan on it only where its first column (the namespace)
 * decides. A probe ends at its `LIMIT`; one that finds fewer rows than its
 * `LIMIT` reads every entry after the partition, to the namespace's end. So
 * every probe is bounded by what the partition holds: past a head by the
 * partition's `next_seq`, from its start by its unfinished jobs
 * (`PostgresStageCounters.unfinishedOf`).
 */
export const inPartition = (j: string, ns: string, topic: string, partition: string) =>
  `(${j}.namespace, ${j}.topic, ${j}.partition_no) >= (${ns}, ${topic}, ${partition}) AND (${j}.namespace, ${j}.topic, ${j}.partition_no) <= (${ns}, ${topic}, ${partition}) AND ${j}.topic IS NOT NULL`;

/**
 * The jobs of one partition past sequence `seq` ({@link inPartition} with the
 * sequence in the lower row bound): the index range then starts right after
 * `seq`, where an `AND seq > …` beside it would start at the partition's
 * first entry and step over the entries of every job finished since the
 * last vacuum (a finished job leaves the partial head index only then): a
 * next-head probe at a partition's end walked thousands of them.
 */
export const inPartitionAfter = (j: string, ns: string, topic: string, partition: string, seq: string) =>
  `(${j}.namespace, ${j}.topic, ${j}.partition_no, ${j}.seq) > (${ns}, ${topic}, ${partition}, ${seq}) AND (${j}.namespace, ${j}.topic, ${j}.partition_no) <= (${ns}, ${topic}, ${partition}) AND ${j}.topic IS NOT NULL`;

/** The order of a partition's jobs (`DESC` appended to each column with `desc`), as the partition indexes hold them; see {@link inPartition}. */
export const partitionOrder = (j: string, desc = false) =>
  ["namespace", "topic", "partition_no", "seq"].map((c) => `${j}.${c}${desc ? " DESC" : ""}`).join(", ");
