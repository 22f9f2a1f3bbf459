/**
 * Ids that carry their time (SPEC §5.3, docs/decisions.md "Partitions"): the growing tables are partitioned
 * by ranges of their id, one partition a day, so a lookup by id finds its partition without probing the
 * others. skyhook_time_id (migration partitions_prepare) makes an id of the seconds since 2020-01-01 UTC
 * shifted left by ID_SEQUENCE_BITS, and the low bits from the table's sequence: unique unless one table takes
 * more than 4 million ids in one second, increasing with time, and below 2^53 (a JavaScript number) until 2088.
 */
import { sql, type SQL } from 'drizzle-orm';

export const ID_SEQUENCE_BITS = 22;
export const ID_EPOCH_S = 1_577_836_800; // 2020-01-01T00:00:00Z

/** The column default of a time-carrying id, from `<table>_id_seq`. */
export const timeId = (table: string): SQL => sql.raw(`skyhook_time_id('${table}_id_seq'::regclass)`);

/** The smallest id made at `at` (a partition's bound). */
export const idAt = (at: Date): number => (Math.floor(at.getTime() / 1000) - ID_EPOCH_S) * 2 ** ID_SEQUENCE_BITS;
