package sqlite

// The statements of MatchPartitions, in the order they run: the same steps
// as the PostgreSQL driver's (see its match_sql.go), over temporary tables
// on the store's one connection. SQLite compares text byte by byte, as Go
// does. ?1 and ?2 are JSON documents read with json_each: the run's source
// ids, and the kind each step makes ({"charge": "charge", ...}) or the
// kinds that link (["charge", "payout", "refund"]).
const (
	matchSetup = `DROP TABLE IF EXISTS temp.m_eff;
DROP TABLE IF EXISTS temp.m_rec;
DROP TABLE IF EXISTS temp.m_tx;
DROP TABLE IF EXISTS temp.m_part;
DROP TABLE IF EXISTS temp.m_cid;
DROP TABLE IF EXISTS temp.m_new;
CREATE TEMP TABLE m_eff (key TEXT NOT NULL, provider TEXT NOT NULL, step TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
  external_id TEXT, created_at TEXT NOT NULL, amount TEXT, currency TEXT, request TEXT, class TEXT, since TEXT, final INTEGER NOT NULL);
CREATE TEMP TABLE m_new (effect_key TEXT, parent_effect_key TEXT, tx_id TEXT, payment_intent TEXT, parent_tx_id TEXT)`

	matchTeardown = `DROP TABLE IF EXISTS temp.m_eff;
DROP TABLE IF EXISTS temp.m_rec;
DROP TABLE IF EXISTS temp.m_tx;
DROP TABLE IF EXISTS temp.m_part;
DROP TABLE IF EXISTS temp.m_cid`

	// matchNew keeps the run's records of transactions that no earlier
	// record holds: only those can name a closed effect back into scope.
	matchNew = `INSERT INTO m_new SELECT x.effect_key, x.parent_effect_key, x.tx_id, x.payment_intent, x.parent_tx_id
FROM evidence x WHERE x.source_id IN (SELECT value FROM json_each(?1))
  AND (x.tx_id = '' OR NOT EXISTS (SELECT 1 FROM evidence o WHERE o.tx_id = x.tx_id AND o.tx_id <> '' AND o.provider = x.provider
    AND o.source_id NOT IN (SELECT value FROM json_each(?1))))`

	// matchScope takes every effect not finally reconciled and not
	// abandoned, and every other one the run's new evidence (m_new) names
	// by key or by external id, in one pass over the effects: the lists of
	// names are only built when a closed effect asks for them, and the
	// unary + keeps SQLite from driving the scan from them.
	matchScope = `INSERT INTO m_eff
SELECT e.key, e.provider, e.step, coalesce(k.value, ''), e.status, e.external_id, e.created_at,
  CASE WHEN NOT json_valid(e.request) THEN NULL WHEN json_type(e.request) = 'object' THEN e.request -> '$.amount' END,
  CASE WHEN NOT json_valid(e.request) THEN NULL WHEN json_type(e.request) = 'object' THEN e.request -> '$.currency' END,
  CASE WHEN NOT json_valid(e.request) THEN e.request WHEN json_type(e.request) <> 'object' THEN e.request END,
  st.class, st.since, coalesce(st.final, 0)
FROM effect e LEFT JOIN effect_state st ON st.key = e.key LEFT JOIN json_each(?2) AS k ON k.key = e.step
WHERE (e.status <> 'abandoned' AND st.final IS NOT TRUE)
   OR +e.key IN (SELECT effect_key FROM m_new WHERE effect_key <> '' UNION ALL SELECT parent_effect_key FROM m_new WHERE parent_effect_key <> '')
   OR +e.external_id IN (
     SELECT tx_id FROM m_new WHERE tx_id <> ''
     UNION ALL SELECT payment_intent FROM m_new WHERE payment_intent <> ''
     UNION ALL SELECT parent_tx_id FROM m_new WHERE parent_tx_id <> '')`

	matchRecordCols = `ev.source_id, ev.seq, ev.line, ev.provider, ev.kind, ev.tx_id, ev.amount_minor, ev.currency, ev.occurred_at,
  ev.pending, ev.failed, ev.effect_key, ev.parent_effect_key, ev.payment_intent, ev.parent_tx_id,
  CASE WHEN ev.tx_id <> '' THEN ev.tx_id ELSE ev.payment_intent END || CASE WHEN ev.kind = 'dispute' AND ev.amount_minor > 0 THEN '+' ELSE '' END AS tid,
  CASE WHEN ev.tx_id = '' AND ev.payment_intent = '' THEN ev.source_id << 32 | ev.seq ELSE 0 END AS own`
	matchRecords = `CREATE TEMP TABLE m_rec AS SELECT 1 AS mine, ` + matchRecordCols + `
FROM evidence ev WHERE ev.source_id IN (SELECT value FROM json_each(?1)) AND ev.kind IN (SELECT value FROM json_each(?2))`
	matchEarlier = `INSERT INTO m_rec SELECT 0, ` + matchRecordCols + `
FROM evidence ev WHERE ev.rowid IN (
  SELECT rowid FROM evidence WHERE effect_key <> '' AND effect_key IN (SELECT key FROM m_eff)
  UNION SELECT rowid FROM evidence WHERE parent_effect_key <> '' AND parent_effect_key IN (SELECT key FROM m_eff)
  UNION SELECT rowid FROM evidence WHERE tx_id <> '' AND tx_id IN (SELECT external_id FROM m_eff WHERE external_id <> '')
  UNION SELECT rowid FROM evidence WHERE payment_intent <> '' AND payment_intent IN (SELECT external_id FROM m_eff WHERE external_id <> '')
  UNION SELECT rowid FROM evidence WHERE parent_tx_id <> '' AND parent_tx_id IN (SELECT external_id FROM m_eff WHERE external_id <> ''))
AND ev.source_id NOT IN (SELECT value FROM json_each(?1)) AND ev.kind IN (SELECT value FROM json_each(?2))`

	matchChargeOfIntent = `UPDATE m_rec AS r SET tid = c.tx_id FROM (
  SELECT provider, payment_intent, tx_id FROM (
    SELECT m.provider, m.payment_intent, m.tx_id, row_number() OVER (PARTITION BY m.provider, m.payment_intent ORDER BY s.uri, m.line, m.tx_id) AS n
    FROM m_rec m JOIN source s ON s.id = m.source_id
    WHERE m.kind = ?1 AND m.tx_id <> '' AND (m.provider, m.payment_intent) IN (
      SELECT provider, payment_intent FROM m_rec WHERE kind = ?1 AND tx_id = '' AND payment_intent <> ''))
  WHERE n = 1) AS c
WHERE r.kind = ?1 AND r.tx_id = '' AND r.provider = c.provider AND r.payment_intent = c.payment_intent`

	matchTransactions = `CREATE TEMP TABLE m_tx AS
SELECT r.provider, r.kind, r.tid, r.own, min(e.key) FILTER (WHERE e.kind = r.kind) AS link, max(e.key) FILTER (WHERE e.kind = r.kind) AS link_hi,
  min(e.key) FILTER (WHERE e.kind = 'charge' AND r.kind IN ('refund', 'dispute')) AS ckey,
  min(r.parent_effect_key) FILTER (WHERE r.parent_effect_key <> '') AS pay_key, NULL AS rel, 0 AS seen,
  min(r.payment_intent) FILTER (WHERE r.payment_intent <> '') AS pi, max(r.payment_intent) FILTER (WHERE r.payment_intent <> '') AS pi_hi,
  min(r.parent_tx_id) FILTER (WHERE r.parent_tx_id <> '') AS parent, max(r.parent_tx_id) FILTER (WHERE r.parent_tx_id <> '') AS parent_hi
FROM m_rec r LEFT JOIN m_eff e ON e.key = r.effect_key AND e.provider = r.provider
GROUP BY r.provider, r.kind, r.tid, r.own`

	// matchConflicts lists, for each transaction whose records name two
	// effects in scope by key, those effects: whichever partition holds
	// the transaction, the matcher defers them all.
	matchConflicts = `SELECT DISTINCT e.key, t.tid FROM m_tx t
JOIN m_rec r ON r.tid = t.tid AND r.provider = t.provider AND r.kind = t.kind AND r.own = t.own
JOIN m_eff e ON e.key = r.effect_key AND e.provider = r.provider AND e.kind = r.kind
WHERE t.link <> t.link_hi`

	matchFirstIDs = `UPDATE m_tx AS t SET pi = f.pi FROM (
  SELECT provider, kind, tid, pi FROM (
    SELECT r.provider, r.kind, r.tid, r.payment_intent AS pi, row_number() OVER (PARTITION BY r.provider, r.kind, r.tid
      ORDER BY s.uri, r.line, r.tx_id, r.amount_minor, r.currency, r.occurred_at, r.effect_key, r.payment_intent) AS n
    FROM m_rec r JOIN source s ON s.id = r.source_id
    WHERE r.own = 0 AND r.payment_intent <> '' AND (r.provider, r.kind, r.tid) IN (SELECT provider, kind, tid FROM m_tx WHERE (link IS NULL OR kind = 'charge') AND pi <> pi_hi))
  WHERE n = 1) AS f
WHERE (t.link IS NULL OR t.kind = 'charge') AND t.own = 0 AND t.provider = f.provider AND t.kind = f.kind AND t.tid = f.tid;
UPDATE m_tx AS t SET parent = f.parent FROM (
  SELECT provider, kind, tid, parent FROM (
    SELECT r.provider, r.kind, r.tid, r.parent_tx_id AS parent, row_number() OVER (PARTITION BY r.provider, r.kind, r.tid
      ORDER BY s.uri, r.line, r.tx_id, r.amount_minor, r.currency, r.occurred_at, r.effect_key, r.payment_intent, r.parent_tx_id) AS n
    FROM m_rec r JOIN source s ON s.id = r.source_id
    WHERE r.own = 0 AND r.parent_tx_id <> '' AND (r.provider, r.kind, r.tid) IN (SELECT provider, kind, tid FROM m_tx WHERE (link IS NULL OR kind = 'charge') AND parent <> parent_hi))
  WHERE n = 1) AS f
WHERE (t.link IS NULL OR t.kind = 'charge') AND t.own = 0 AND t.provider = f.provider AND t.kind = f.kind AND t.tid = f.tid`

	matchByID = `UPDATE m_tx SET link = coalesce(
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key = e.key
    WHERE m_tx.own = 0 AND e.external_id = m_tx.tid AND e.provider = m_tx.provider AND s.kind = m_tx.kind ORDER BY s.key DESC LIMIT 1),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key = e.key
    WHERE e.external_id = m_tx.pi AND e.provider = m_tx.provider AND s.kind = m_tx.kind ORDER BY s.key DESC LIMIT 1),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key = e.key
    WHERE e.external_id = m_tx.parent AND e.provider = m_tx.provider AND s.kind = m_tx.kind ORDER BY s.key DESC LIMIT 1),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key = e.key
    WHERE m_tx.own = 0 AND instr(m_tx.tid, '/') > 0 AND substr(m_tx.tid, instr(m_tx.tid, '/') + 1) <> ''
      AND e.external_id = substr(m_tx.tid, instr(m_tx.tid, '/') + 1) AND e.provider = m_tx.provider AND s.kind = m_tx.kind
    ORDER BY s.key DESC LIMIT 1))
WHERE link IS NULL`

	// matchRelated gives each refund or dispute that links to no effect
	// the charge effect it belongs to, as the PostgreSQL driver's
	// matchRelated does.
	matchRelated = `CREATE TEMP TABLE m_cid AS
SELECT provider, id, min(link) AS link FROM (
  SELECT provider, tid AS id, link FROM m_tx WHERE kind = 'charge' AND link IS NOT NULL AND tid <> ''
  UNION ALL SELECT provider, pi, link FROM m_tx WHERE kind = 'charge' AND link IS NOT NULL AND pi <> ''
  UNION ALL SELECT provider, parent, link FROM m_tx WHERE kind = 'charge' AND link IS NOT NULL AND parent <> ''
  UNION ALL SELECT provider, substr(tid, instr(tid, '/') + 1), link FROM m_tx
    WHERE kind = 'charge' AND link IS NOT NULL AND own = 0 AND instr(tid, '/') > 0 AND substr(tid, instr(tid, '/') + 1) <> '')
WHERE id IN (SELECT parent FROM m_tx WHERE link IS NULL AND kind IN ('refund', 'dispute')
  UNION SELECT pi FROM m_tx WHERE link IS NULL AND kind IN ('refund', 'dispute'))
GROUP BY provider, id;
CREATE INDEX temp.m_cid_id ON m_cid (id, provider);
UPDATE m_tx SET rel = coalesce(
  (SELECT s.key FROM m_eff s WHERE s.key = m_tx.pay_key AND s.provider = m_tx.provider AND s.kind = 'charge'),
  m_tx.ckey,
  (SELECT c.link FROM m_cid c WHERE c.provider = m_tx.provider AND c.id = m_tx.parent),
  (SELECT s.key FROM m_eff s WHERE s.external_id = m_tx.parent AND s.provider = m_tx.provider AND s.kind = 'charge' ORDER BY s.key DESC LIMIT 1),
  (SELECT c.link FROM m_cid c WHERE c.provider = m_tx.provider AND c.id = m_tx.pi),
  (SELECT s.key FROM m_eff s WHERE s.external_id = m_tx.pi AND s.provider = m_tx.provider AND s.kind = 'charge' ORDER BY s.key DESC LIMIT 1))
WHERE link IS NULL AND kind IN ('refund', 'dispute')`

	// matchSeen marks the transactions that link to nothing and that
	// earlier evidence holds, as the PostgreSQL driver's matchSeen does.
	matchSeen = `UPDATE m_tx SET seen = 1 WHERE link IS NULL AND rel IS NULL AND own = 0
  AND EXISTS (SELECT 1 FROM evidence o WHERE o.tx_id = m_tx.tid AND o.tx_id <> '' AND o.provider = m_tx.provider
    AND o.source_id NOT IN (SELECT value FROM json_each(?1)))`

	matchPartKeys = `CREATE INDEX temp.m_tx_id ON m_tx (tid, provider, kind, own);
CREATE TEMP TABLE m_part AS
SELECT coalesce(t.link, t.rel, CASE WHEN r.own = 0 THEN r.tid ELSE s.uri || ':' || r.line END) AS pkey, coalesce(t.link, t.rel) IS NOT NULL AS linked,
  r.mine, r.source_id, r.line, r.provider, r.kind, r.tx_id, r.amount_minor, r.currency, r.occurred_at, r.pending, r.failed,
  r.effect_key, r.parent_effect_key, r.payment_intent, r.parent_tx_id
FROM m_rec r JOIN m_tx t ON t.tid = r.tid AND t.provider = r.provider AND t.kind = r.kind AND t.own = r.own
LEFT JOIN source s ON r.own <> 0 AND s.id = r.source_id
WHERE NOT t.seen;
DROP TABLE temp.m_rec;
DROP TABLE temp.m_tx;
DROP TABLE IF EXISTS temp.m_cid;
CREATE INDEX temp.m_part_key ON m_part (pkey)`

	matchBounds = `SELECT k FROM (SELECT key AS k, row_number() OVER (ORDER BY key) AS n FROM m_eff) WHERE n % ?1 = 0
UNION
SELECT k FROM (SELECT pkey AS k, row_number() OVER (ORDER BY pkey) AS n FROM m_part WHERE NOT linked) WHERE n % ?1 = 0
ORDER BY 1`

	// matchRecordStates and matchRecordConfirmed record a partition's
	// confirmations, given as one JSON array of [key, external id], in two
	// statements.
	matchRecordStates = `INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
SELECT value ->> 0, ?2, 1, ?3, ?4, ?4 FROM json_each(?1) WHERE true
ON CONFLICT (key) DO UPDATE SET class = excluded.class, final = excluded.final, run_id = excluded.run_id,
  classified_at = excluded.classified_at,
  since = CASE WHEN effect_state.class = excluded.class THEN effect_state.since ELSE excluded.since END`
	matchRecordConfirmed = `UPDATE effect SET status = 'confirmed', external_id = coalesce(effect.external_id, c.id), confirmed_at = ?2
FROM (SELECT value ->> 0 AS key, value ->> 1 AS id FROM json_each(?1) WHERE value ->> 1 <> '') AS c
WHERE effect.key = c.key AND effect.status = 'attempted'`
)
