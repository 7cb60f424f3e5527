-- A night's evidence is the largest write of a run. Its foreign key to
-- source checked each row against the source that the same transaction
-- has just inserted, and no role but the owner may delete a source or its
-- evidence (see the grants): it cost a fifth of the COPY (300,000 rows in
-- 10.1 s with it and 8.1 s without, with the lookup indexes). Hash indexes
-- for the lookups, half the size of the B-trees and faster to write, were
-- measured too and rejected: a list of values probes a hash index only
-- through a bitmap scan, which the planner does not choose for the earlier
-- evidence of a second night (its link took 40 s instead of 4).
ALTER TABLE evidence DROP CONSTRAINT evidence_source_id_fkey;
