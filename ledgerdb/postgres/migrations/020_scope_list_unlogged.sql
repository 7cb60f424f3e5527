-- The lists a run reads its scope from (migration 018) and its mark are
-- written without the write-ahead log: a million of the triggers' rows
-- were written in 1.3 s against 2.7 s, and deleted in 0.29 s against
-- 0.71 s (by hand, with their index; in a 1M run the forgetting took
-- 0.28 and 0.30 s against 0.65 and 0.72 s). A crash, a restore from a
-- base backup or a standby's promotion empties the three together
-- (PostgreSQL resets every unlogged table when it recovers), and a ledger
-- without a mark is read whole by its next run: what the lists held is
-- read again, never lost. One of them written with the log and another
-- not would lose the effects listed after the last run
-- (TestACrashLosesNoNewEffect).
ALTER TABLE effect_new SET UNLOGGED;
ALTER TABLE effect_pending SET UNLOGGED;
ALTER TABLE scope_mark SET UNLOGGED;
