import type { ServerMetrics } from "../metrics/server-metrics.js";
import type { RenewLeases } from "../worker/lease-renewer.js";

/** Counts each partition lease renewal by topic and outcome (`later_partition_lease_renewals_total`) around `renew`. */
export function meteredRenewals(renew: RenewLeases, metrics: ServerMetrics | null): RenewLeases {
  if (metrics === null) return renew;
  return async (claims, leaseExpiresAt) => {
    let renewed: Awaited<ReturnType<RenewLeases>>;
    try {
      renewed = await renew(claims, leaseExpiresAt);
    } catch (error) {
      for (const c of claims) if (c.head) metrics.leaseRenewal(c.head.topic, "error");
      throw error;
    }
    for (const c of claims) if (c.head) metrics.leaseRenewal(c.head.topic, renewed.kept.has(c) ? "renewed" : "lost");
    return renewed;
  };
}
