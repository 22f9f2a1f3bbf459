-- Whether BullMQ's add of the deduplicated job of fetch key `fk` would change nothing: mirrors the
-- deduplicate path of BullMQ's add script (keepLastIfActive). The key's job exists and
--  - is not active (waiting, or delayed): the add does nothing (C1). Safe to skip: when the job runs it
--    claims every row committed before its claim, and the rows being queued are committed before this check;
--  - or is active and its follow-up is already stored (`dn:<fk>`): the add would only store the same
--    follow-up again (C2). The follow-up job is created when the active one ends and claims these rows.
-- Anything else (no job, a job whose hash is gone, an active job without a follow-up) needs BullMQ's add.
-- "Active" is read from the job itself, in constant time: BullMQ sets `processedOn` in the same script that
-- moves a job to `active`, and an active job is not in the `delayed` set. A job that ran before and waits
-- again (a retry, a stalled job) also counts as active: the side that adds.
--
-- It reads BullMQ's private key layout (`de:<id>` holds the job id; the job is the hash `<queue>:<jobId>`;
-- `delayed` is a sorted set) because BullMQ offers no public way to ask this of a batch in one step: its
-- Queue.getDeduplicationJobId and Job.getState are a round trip per job, between which the answer can change.
-- test/integration/fetch-queue.test.ts holds it to the pinned BullMQ's behaviour. A speed mechanism kept for
-- its measured gain (docs/decisions.md, "Speed mechanisms"): under a flood most adds find their key's job
-- still waiting, and BullMQ's add script would do nothing useful at a high price.
-- `q`: {dedup, job, delayed}, the queue's key prefixes.
local function covered(q, fk)
  local id = redis.call('GET', q.dedup .. fk)
  if not id or redis.call('EXISTS', q.job .. id) == 0 then return false end
  local mayBeActive = redis.call('HEXISTS', q.job .. id, 'processedOn') == 1 and not redis.call('ZSCORE', q.delayed, id)
  return not mayBeActive or redis.call('EXISTS', q.job .. 'dn:' .. fk) == 1
end
