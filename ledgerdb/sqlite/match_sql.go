package sqlite

// The statements of PartitionMatch, in the order they run: the same steps
// as the PostgreSQL driver's (see its match_sql.go), over temporary tables
// on the store's one connection: the ledger fetches, by keys, the effects
// in scope (m_eff) and the earlier records that name them, and the run
// reads them and its own records once into a driver.Spill, which cuts
// them into partitions. ?1 and ?2 are JSON documents read with json_each:
// the run's source ids, and the kinds that link (["charge", "payout",
// "refund"]).
// Hand-written: temporary tables no migration creates, text joined at run time, and UPDATE ... FROM, which sqlc's SQLite parser rejects.
const (
	// matchClosed says whether any effect is closed (final or abandoned):
	// only then can the run's evidence name one back into scope.
	matchClosed = `SELECT EXISTS (SELECT 1 FROM effect_state WHERE final) OR EXISTS (SELECT 1 FROM effect WHERE status = 'abandoned')`
	// matchEarlierExists says whether the ledger holds evidence of sources
	// other than the run's (a JSON list).
	matchEarlierExists = `SELECT EXISTS (SELECT 1 FROM source WHERE id NOT IN (SELECT value FROM json_each(?)))`

	matchSetup = `DROP TABLE IF EXISTS temp.m_eff;
DROP TABLE IF EXISTS temp.m_new;
CREATE TEMP TABLE m_eff (key TEXT NOT NULL, provider TEXT NOT NULL, step TEXT NOT NULL, status TEXT NOT NULL,
  external_id TEXT, created_at TEXT NOT NULL, request TEXT NOT NULL, class TEXT, since TEXT, final INTEGER NOT NULL);
CREATE TEMP TABLE m_new (effect_key TEXT, parent_effect_key TEXT, tx_id TEXT, payment_intent TEXT, parent_tx_id TEXT)`

	matchTeardown = `DROP TABLE IF EXISTS temp.m_eff;
DROP TABLE IF EXISTS temp.m_new`

	// matchNew keeps the run's records of transactions that no earlier
	// record holds: only those can name a closed effect back into scope.
	matchNew = `INSERT INTO m_new SELECT x.effect_key, x.parent_effect_key, x.tx_id, x.payment_intent, x.parent_tx_id
FROM evidence x WHERE x.source_id IN (SELECT value FROM json_each(?1))
  AND (x.tx_id = '' OR NOT EXISTS (SELECT 1 FROM evidence o WHERE o.tx_id = x.tx_id AND o.tx_id <> '' AND o.provider = x.provider
    AND o.source_id NOT IN (SELECT value FROM json_each(?1))))`

	// matchScopeEffects selects every effect not finally reconciled and
	// not abandoned, and every other one the run's new evidence (m_new)
	// names by key or by external id, in one pass over the effects: the
	// lists of names are only built when a closed effect asks for them, and
	// the unary + keeps SQLite from driving the scan from them. matchScope
	// keeps them in m_eff, for matchEarlier; with no earlier evidence the
	// run reads them straight away (matchEffects). The request comes whole:
	// the run reduces it to its amount and currency (driver.ReducedRequest),
	// where SQLite's JSON functions parsed it five times (300,000 effects
	// read in 1.3 s that way, in 0.19 s as plain text).
	matchScopeEffects = `SELECT e.key, e.provider, e.step, e.status, e.external_id, e.created_at, e.request,
  st.class, st.since, coalesce(st.final, 0) AS final
FROM effect e LEFT JOIN effect_state st ON st.key = e.key
WHERE (e.status <> 'abandoned' AND st.final IS NOT TRUE)
   OR +e.key IN (SELECT effect_key FROM m_new WHERE effect_key <> '' UNION ALL SELECT parent_effect_key FROM m_new WHERE parent_effect_key <> '')
   OR +e.external_id IN (
     SELECT tx_id FROM m_new WHERE tx_id <> ''
     UNION ALL SELECT payment_intent FROM m_new WHERE payment_intent <> ''
     UNION ALL SELECT parent_tx_id FROM m_new WHERE parent_tx_id <> '')`
	matchScope = `INSERT INTO m_eff ` + matchScopeEffects

	// matchEffects reads the effects in scope from m_eff, or from
	// matchScopeEffects itself, which it is followed by.
	matchEffects = `SELECT key, provider, step, status, coalesce(external_id, ''), created_at, request,
  coalesce(class, ''), coalesce(since, ''), final FROM `

	matchRecordCols = `ev.source_id, ev.line, ev.provider, ev.kind, ev.tx_id, ev.amount_minor, ev.currency, ev.occurred_at,
  ev.pending, ev.failed, ev.effect_key, ev.parent_effect_key, ev.payment_intent, ev.parent_tx_id`
	// matchRecords reads the run's records (?3: of its sources, those
	// whose ingest kept none), and matchEarlier the earlier ones (not of
	// the run's sources, ?1) that name an effect in scope (in m_eff).
	matchRecords = `SELECT 1 AS mine, ` + matchRecordCols + `
FROM evidence ev WHERE ev.source_id IN (SELECT value FROM json_each(?3)) AND ev.kind IN (SELECT value FROM json_each(?2))`
	matchEarlier = `SELECT 0, ` + matchRecordCols + `
FROM evidence ev WHERE ev.rowid IN (
  SELECT rowid FROM evidence WHERE effect_key <> '' AND effect_key IN (SELECT key FROM m_eff)
  UNION SELECT rowid FROM evidence WHERE parent_effect_key <> '' AND parent_effect_key IN (SELECT key FROM m_eff)
  UNION SELECT rowid FROM evidence WHERE tx_id <> '' AND tx_id IN (SELECT external_id FROM m_eff WHERE external_id <> '')
  UNION SELECT rowid FROM evidence WHERE payment_intent <> '' AND payment_intent IN (SELECT external_id FROM m_eff WHERE external_id <> '')
  UNION SELECT rowid FROM evidence WHERE parent_tx_id <> '' AND parent_tx_id IN (SELECT external_id FROM m_eff WHERE external_id <> ''))
AND ev.source_id NOT IN (SELECT value FROM json_each(?1)) AND ev.kind IN (SELECT value FROM json_each(?2))`

	// matchRecordStates and matchRecordConfirmed record a partition's
	// confirmations in two statements: the states from a JSON array of
	// the keys, the attempted effects from one of keys and external ids in
	// turn, read by position. Each element is a plain string that
	// json_each gives as it is; pairs as arrays of their own were parsed
	// again for each member (2.2 s of CPU in a 1M night's profile).
	matchRecordStates = `INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
SELECT value, ?2, 1, ?3, ?4, ?4 FROM json_each(?1) WHERE true
ON CONFLICT (key) DO UPDATE SET class = excluded.class, final = excluded.final, run_id = excluded.run_id,
  classified_at = excluded.classified_at,
  since = CASE WHEN effect_state.class = excluded.class THEN effect_state.since ELSE excluded.since END`
	matchRecordConfirmed = `UPDATE effect SET status = 'confirmed', external_id = coalesce(effect.external_id, c.id), confirmed_at = ?2
FROM (SELECT j.key AS at, j.value AS key, lead(j.value) OVER (ORDER BY j.key) AS id FROM json_each(?1) AS j) AS c
WHERE c.at % 2 = 0 AND effect.key = c.key AND effect.status = 'attempted'`
)
