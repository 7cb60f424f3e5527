package postgres

// The statements of PartitionMatch, in the order they run; hand-written,
// as they work over temporary tables and some are built at run time, which
// sqlc cannot express. The ledger
// fetches, by keys, what a run needs, and the run reads it once into a
// driver.Spill, which cuts it into partitions. Over temporary tables:
//
//	m_eff    the effects in scope, with what the matcher reads of them
//	m_early  the earlier records that name an effect in scope
const (
	matchSetup = `SET work_mem = '256MB';
SET jit = off;
SET temp_buffers = '256MB';
CREATE TEMP TABLE m_early AS SELECT ` + matchRecordCols + ` FROM evidence WITH NO DATA;
CREATE TEMP TABLE m_eff (key text NOT NULL, provider text NOT NULL, step text NOT NULL, status text NOT NULL, external_id text, created_at timestamptz NOT NULL, amount text, currency text, request text, class text,
  since timestamptz, final boolean NOT NULL)`

	// matchWriterSetup prepares a connection that records confirmations.
	matchWriterSetup = `SET jit = off;
CREATE TEMP TABLE IF NOT EXISTS m_conf (key text NOT NULL, external_id text NOT NULL, fresh boolean NOT NULL) ON COMMIT DELETE ROWS`

	// matchSummarize summarizes the pages of evidence that its BRIN index
	// has not (the last run's, the ingest's): 0.4 to 0.6 s for a first
	// night's 1.5M records; a later night has only its own pages left.
	// Only the table's owner may; for
	// another role autovacuum does it (autosummarize).
	matchSummarize = `SELECT brin_summarize_new_values('evidence_source'::regclass)
WHERE pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'evidence'::regclass), 'USAGE')`

	// matchClosed says whether any effect is closed (final or abandoned):
	// only then can the run's evidence name one back into scope.
	matchClosed = `SELECT EXISTS (SELECT 1 FROM effect_state WHERE final) OR EXISTS (SELECT 1 FROM effect WHERE status = 'abandoned')`

	// matchEarlierExists says whether the ledger holds evidence of sources
	// other than the run's ($1).
	matchEarlierExists = `SELECT EXISTS (SELECT 1 FROM source WHERE id <> ALL($1))`

	// matchEffect selects what the matcher reads of an effect: of its
	// request only the amount and the currency (the whole request when it
	// is not an object, for the matcher to reject), as the effect's
	// generated columns hold them (migration 021).
	matchEffect = `SELECT e.key, e.provider, e.step, e.status, e.external_id, e.created_at,
  e.request_amount AS amount, e.request_currency AS currency, e.request_other AS request,
  st.class, st.since, coalesce(st.final, false) AS final
FROM effect e LEFT JOIN effect_state st ON st.key = e.key`

	// matchOpen selects every effect not finally reconciled and not
	// abandoned (matchScopeNamed, below, adds the closed ones the run
	// names), reading every effect; matchOpenListed the same from the
	// effects the ledger lists (migration 018): those whose state is not
	// final, those a run left without a state, and those written by a
	// transaction from $1 on, the horizon of the last run's snapshot.
	// fetch puts them in m_eff, or, where no effect is closed and no
	// earlier evidence exists and m_eff has no other use, reads them
	// straight away.
	matchOpen       = matchEffect + ` WHERE e.status <> 'abandoned' AND st.final IS NOT TRUE`
	matchOpenListed = matchEffect + ` WHERE e.key = ANY(ARRAY(SELECT key FROM effect_state WHERE NOT final
    UNION ALL SELECT key FROM effect_pending UNION ALL SELECT key FROM effect_new WHERE xid >= $1::xid8))
  AND e.status <> 'abandoned' AND st.final IS NOT TRUE`

	// matchHorizon gives the horizon the last run left (migration 018), if
	// it is of this cluster and not ahead of this snapshot and the triggers
	// that list new effects are on, and this snapshot's own: the oldest
	// transaction it cannot see.
	matchHorizon = `SELECT (SELECT horizon::text FROM scope_mark WHERE system = (SELECT system_identifier FROM pg_control_system())
    AND horizon <= pg_snapshot_xmax(pg_current_snapshot())
    AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'effect'::regclass AND tgenabled = 'A'
         AND tgname IN ('effect_new_insert', 'effect_new_update')) = 2),
  pg_snapshot_xmin(pg_current_snapshot())::text`

	// Once a run's partitions are recorded, in one transaction, it forgets
	// the effects listed as left without a state that have one now, are
	// gone or are abandoned (one that comes back is listed again by the
	// trigger: matchPendingDone), then notes those in its scope it left
	// without a state itself (matchLeftOpen; noted first, each would be
	// looked up for nothing: 0.37 s for a first night's 35k), and moves the
	// horizon to its own (matchMark). Until that commits the next run reads
	// from the last horizon; of two runs at once the later horizon stays.
	// Then it forgets the new effects listed below the horizon
	// (matchForget, migration 019), which no run reads from the list again
	// (a run that read it in an older snapshot still sees them).
	// A distributed run notes those of its staged effects ($1 the run)
	// that had no state and have none yet (matchLeftStaged).
	matchLeftOpen   = `INSERT INTO effect_pending SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`
	matchLeftStaged = `INSERT INTO effect_pending SELECT key FROM stage_effect se WHERE run_id = $1 AND class IS NULL
  AND NOT EXISTS (SELECT 1 FROM effect_state st WHERE st.key = se.key) ON CONFLICT DO NOTHING`
	matchPendingDone = `DELETE FROM effect_pending p WHERE EXISTS (SELECT 1 FROM effect_state st WHERE st.key = p.key)
  OR NOT EXISTS (SELECT 1 FROM effect e WHERE e.key = p.key AND e.status <> 'abandoned')`
	matchMark = `INSERT INTO scope_mark (system, horizon) SELECT system_identifier, $1::xid8 FROM pg_control_system()
ON CONFLICT (one) DO UPDATE SET system = EXCLUDED.system,
  horizon = CASE WHEN scope_mark.system = EXCLUDED.system AND scope_mark.horizon <= pg_snapshot_xmax(pg_current_snapshot())
    THEN greatest(scope_mark.horizon, EXCLUDED.horizon) ELSE EXCLUDED.horizon END`
	matchForget = `SELECT effect_new_forget()`

	// matchRecords are the records matched: the run's ($1 its sources) and
	// the earlier ones, of the kinds that link ($2).
	matchRecords = `SELECT true AS mine, ` + matchRecordCols + ` FROM evidence WHERE source_id = ANY($1) AND kind = ANY($2)
UNION ALL SELECT false, * FROM m_early WHERE kind = ANY($2)`

	// matchEffectCols and matchPartCols are what a partition holds of an
	// effect and of a record.
	matchEffectCols = `key, provider, step, status, coalesce(external_id, ''), created_at, amount, currency, request,
  coalesce(class, ''), since, final`
	matchPartCols = `mine, uri, webhook, line, provider, kind, tx_id, amount_minor, currency, occurred_at, pending, failed,
  effect_key, parent_effect_key, payment_intent, parent_tx_id`

	// matchPartRecords gives the records as matchPartCols does, with their
	// source's id in place of its URI and whether it is a webhook dump.
	matchPartRecords = `SELECT mine, source_id, line, provider, kind, tx_id, amount_minor, currency, occurred_at, pending, failed,
  effect_key, parent_effect_key, payment_intent, parent_tx_id FROM (` + matchRecords + `) r`

	// matchRecordStates and matchRecordConfirmed record a partition's
	// confirmations, as FindingRecord records confirmed findings: the
	// states of effects that had none (fresh) are copied into effect_state
	// (record), the others upserted from m_conf; should another writer
	// have given a fresh one a state meanwhile, the upsert does them all
	// ($4).
	matchRecordStates = `INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
SELECT key, $3, true, $1, $2, $2 FROM m_conf WHERE $4 OR NOT fresh
ON CONFLICT (key) DO UPDATE SET class = EXCLUDED.class, final = EXCLUDED.final, run_id = EXCLUDED.run_id,
  classified_at = EXCLUDED.classified_at,
  since = CASE WHEN effect_state.class = EXCLUDED.class THEN effect_state.since ELSE EXCLUDED.since END`
	// matchRecordConfirmed takes the attempted effects' keys and ids as
	// arrays ($2, $3), not from m_conf: estimated as a few rows, they are
	// looked up by key, where m_conf, of no statistics, made the plan a
	// scan of every effect.
	matchRecordConfirmed = `UPDATE effect e SET status = 'confirmed', external_id = coalesce(e.external_id, c.external_id), confirmed_at = $1
FROM unnest($2::text[], $3::text[]) AS c (key, external_id) WHERE e.key = c.key AND e.status = 'attempted'
RETURNING e.key, coalesce(e.external_id, '')`
)

// matchEarlier copies the earlier records that name an effect in scope
// by key (their own, or their parent's) or by its external id (as their
// transaction, payment intent or parent's transaction). The branches on
// evidence probe an index with the ids of the effects in scope, so that
// their cost follows the scope, not the evidence. A record that names an
// effect by key is found through the effect's external id, as its
// transaction or payment intent, or through an external id the effect
// had (effect_renamed), or in evidence_loose (migration 022), where every
// record with a parent is (migration 023). The loose records, a few
// percent of the evidence, are joined to the scope (IN), for the planner
// to hash or probe as their numbers say (by hand, for a second night's
// 131k keys and 114k ids on a 1M ledger: 0.12 to 0.15 s each hashed,
// against 0.32, 0.16 and 0.18 s probed; the whole statement in a run took
// 0.95 s against 0.97 s).
var matchEarlier = `INSERT INTO m_early ` + earlierOf("m_eff")

// matchEarlierBack adds the earlier records of the effects the run's
// records named back into scope (m_back) that m_early does not hold.
var matchEarlierBack = `INSERT INTO m_early SELECT * FROM (` + earlierOf("m_back") + `) n EXCEPT SELECT * FROM m_early`

// earlierOf selects the earlier records that name an effect of the table
// scope (as m_eff holds them).
func earlierOf(scope string) string {
	return matchEarlierBy("tx_id", "external_id", scope) + `
UNION ` + matchEarlierBy("payment_intent", "external_id", scope) + `
UNION ` + matchLooseBy("effect_key", "key", scope) + `
UNION ` + matchLooseBy("parent_effect_key", "key", scope) + `
UNION ` + matchLooseBy("parent_tx_id", "external_id", scope) + `
UNION ` + matchRenamedBy("tx_id", scope) + `
UNION ` + matchRenamedBy("payment_intent", scope)
}

// matchLooseBy selects the earlier loose records whose column col is the
// effect column of an effect in scope.
func matchLooseBy(col, effectCol, scope string) string {
	return `SELECT ` + matchRecordCols + ` FROM evidence_loose WHERE source_id <> ALL($1) AND ` + col + ` <> ''
  AND ` + col + ` COLLATE "C" IN (SELECT ` + effectCol + ` FROM ` + scope + `)`
}

// matchRenamedBy selects the earlier records whose column col is an
// external id that an effect in scope had, and that name it by key.
func matchRenamedBy(col, scope string) string {
	return `SELECT ` + matchRecordCols + ` FROM evidence WHERE source_id <> ALL($1) AND ` + col + ` <> ''
  AND ` + col + ` COLLATE "C" = ANY(ARRAY(SELECT r.external_id FROM effect_renamed r JOIN ` + scope + ` e ON e.key = r.key))
  AND effect_key IN (SELECT r.key FROM effect_renamed r JOIN ` + scope + ` e ON e.key = r.key)`
}

// matchEarlierUnsorted copies the records that name an effect in scope by
// key, or a parent by key or transaction, in the sources not sorted yet
// (other than the run's), read whole: those written since the run sorted
// the others, when there are any. The scope's keys and ids are hashed
// (IN), not searched one by one for every record (= ANY of an array).
const matchEarlierUnsorted = `INSERT INTO m_early SELECT ` + matchRecordCols + ` FROM evidence
WHERE source_id = ANY(ARRAY(SELECT id FROM source WHERE NOT sorted AND id <> ALL($1)))
  AND (effect_key <> '' AND effect_key COLLATE "C" IN (SELECT key FROM m_eff)
    OR parent_effect_key <> '' AND parent_effect_key COLLATE "C" IN (SELECT key FROM m_eff)
    OR parent_tx_id <> '' AND parent_tx_id COLLATE "C" IN (SELECT external_id FROM m_eff WHERE external_id <> ''))
EXCEPT SELECT * FROM m_early`

// matchSortEarlier sorts the sources other than the run's ($1) that no
// run sorted (migration 022), before the run reads them; matchSortOwn
// sorts the run's own sources once they are matched: each record the
// run's process found loose (m_loose names it), looked up by its
// transaction, and, in the sources of $3, read whole, every record naming
// a key or a parent of a kind that does not link ($2) in those of $4 (the
// sources the run read from the ledger: a kept source's were copied), and
// those m_loose names that have no transaction.
const (
	matchSortEarlier = `SELECT sort_sources(ids) FROM (SELECT ARRAY(SELECT id FROM source WHERE NOT sorted AND id <> ALL($1)) ids) s
WHERE cardinality(ids) > 0`
	matchSortSources = `UPDATE source SET sorted = true WHERE id = ANY($1) AND NOT sorted RETURNING id`
	matchLooseSetup  = `CREATE TEMP TABLE m_loose (uri text NOT NULL, line integer NOT NULL, tx_id text NOT NULL, effect_key text NOT NULL) ON COMMIT DROP`
	matchSortOwn     = `WITH s AS (SELECT id, uri FROM source WHERE id = ANY($1))
INSERT INTO evidence_loose SELECT v.* FROM m_loose p JOIN s ON s.uri = p.uri
  JOIN evidence v ON v.tx_id COLLATE "C" = p.tx_id AND v.tx_id <> '' AND v.source_id = s.id AND v.line = p.line AND v.effect_key = p.effect_key
WHERE p.tx_id <> ''
UNION ALL SELECT v.* FROM evidence v JOIN s ON s.id = v.source_id
WHERE v.source_id = ANY($3) AND (v.effect_key <> '' OR v.parent_effect_key <> '' OR v.parent_tx_id <> '') AND (v.kind <> ALL($2) AND v.source_id = ANY($4)
  OR v.tx_id = '' AND (s.uri, v.line, v.effect_key) IN (SELECT uri, line, effect_key FROM m_loose WHERE tx_id = ''))`
)

// matchRecordCols are the columns of evidence that the matching reads of
// a record.
const matchRecordCols = `source_id, seq, line, provider, kind, tx_id, amount_minor, currency, occurred_at, pending, failed, effect_key,
  parent_effect_key, payment_intent, parent_tx_id`

// matchEarlierBy selects the earlier records whose column col (which has
// a partial index where it is not empty, in the "C" collation) is the
// effect column of an effect in scope: probed with the array of those
// values, by index.
func matchEarlierBy(col, effectCol, scope string) string {
	return `SELECT ` + matchRecordCols + ` FROM evidence WHERE source_id <> ALL($1) AND ` + col + ` <> ''
  AND ` + col + ` COLLATE "C" = ANY(ARRAY(SELECT ` + effectCol + ` FROM ` + scope + ` WHERE ` + effectCol + ` <> ''))`
}

// matchNamed, matchCandidates and matchScopeNamed add to the scope every
// closed effect (abandoned, or final) that a record of the run ($1: its
// sources) names by key or by external id, when that record is of a
// transaction no earlier record holds: a late duplicate re-opens a
// confirmed effect, a report read again does not. matchNamed lists the
// effects the run's records name, on a connection of its own while the
// scope is read (in the scope's snapshot: fetch); the candidates (m_cand)
// are those of them not in scope already ($1 here): mostly none, what a
// night names being mostly open, and then nothing more is asked (EXPLAIN
// ANALYZE of a second night of 100k showed 0.17 s of sorting the run's
// records for joins that found nothing). Only for those is it asked
// whether a record naming them is new: by index for each id an evidence
// index holds, and for the keys and the parent's transaction through the
// run's records joined to the candidates (no index holds every record's
// key or parent: migrations 022 and 023). The names come from one read of the run's records (r), its
// columns of keys and of ids each taken as a list (unnesting an array of
// them for every record cost a second night 0.15 s of 0.9 s); the ids are
// not made distinct first, since the index scan sorts its array and drops
// repeats itself (a second night: 1.0 s against 1.2 to 1.5 s with a read
// for each and a DISTINCT).
var (
	matchNamed = `WITH ` + matchRunNames + `
SELECT effect_key FROM r WHERE effect_key <> '' UNION SELECT parent_effect_key FROM r WHERE parent_effect_key <> ''
UNION SELECT key FROM effect WHERE external_id = ANY(ARRAY(
    SELECT tx_id FROM r WHERE tx_id <> '' UNION ALL SELECT payment_intent FROM r WHERE payment_intent <> ''
    UNION ALL SELECT parent_tx_id FROM r WHERE parent_tx_id <> ''))`
	matchCandidates = `CREATE TEMP TABLE m_cand AS SELECT key FROM unnest($1::text[]) AS c (key) EXCEPT SELECT key FROM m_eff`
	matchScopeNamed = `INSERT INTO m_eff ` + matchEffect + `
WHERE e.key = ANY(ARRAY(WITH ` + matchRunNames + `
  SELECT c.key FROM m_cand c JOIN effect n ON n.key = c.key
  WHERE ` + newRecordNaming("tx_id", "n.external_id") + `
    OR ` + newRecordNaming("payment_intent", "n.external_id") + `
  UNION SELECT x.key FROM (SELECT c.key, x.tx_id, x.provider FROM m_cand c JOIN r x ON x.effect_key = c.key OFFSET 0) x WHERE ` + newTransaction + `
  UNION SELECT x.key FROM (SELECT c.key, x.tx_id, x.provider FROM m_cand c JOIN r x ON x.parent_effect_key = c.key OFFSET 0) x WHERE ` + newTransaction + `
  UNION SELECT x.key FROM (SELECT c.key, x.tx_id, x.provider FROM m_cand c JOIN effect n ON n.key = c.key
      JOIN r x ON x.parent_tx_id = n.external_id AND x.parent_tx_id <> '' OFFSET 0) x WHERE ` + newTransaction + `))
  AND (e.status = 'abandoned' OR st.final)`
)

// matchRunNames reads the names the run's records ($1: its sources) hold, as r.
const matchRunNames = `r AS MATERIALIZED (SELECT provider, effect_key, parent_effect_key, tx_id, payment_intent, parent_tx_id FROM evidence WHERE source_id = ANY($1))`

// newRecordNaming says whether a record of the run names value in col
// and is of a transaction no earlier record holds. source_id + 0 keeps
// the planner on col's index; OFFSET 0 makes the earlier-record check one
// probe of evidence_tx_id, not a hash of every earlier tx_id.
func newRecordNaming(col, value string) string {
	return `EXISTS (SELECT 1 FROM evidence x WHERE x.` + col + ` COLLATE "C" = ` + value + ` AND x.` + col + ` <> '' AND x.source_id + 0 = ANY($1)
    AND ` + newTransaction + `)`
}

// newTransaction says whether the run's record x is of a transaction no
// earlier record holds.
const newTransaction = `(x.tx_id = '' OR NOT EXISTS (SELECT 1 FROM evidence o WHERE o.tx_id COLLATE "C" = x.tx_id AND o.tx_id <> '' AND o.provider = x.provider
      AND o.source_id <> ALL($1) OFFSET 0))`
