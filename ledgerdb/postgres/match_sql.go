package postgres

// The statements of MatchPartitions, in the order they run. They restate
// matcher's linking rules in SQL, over temporary tables:
//
//	m_eff    the effects in scope, with what the matcher reads of them
//	m_early  the earlier records that name an effect in scope, as matched
//	m_coi    the charge of each payment intent that a charge record names
//	         without its charge id
//	m_tx     one row per transaction: the effect it links to, or the
//	         charge effect it refunds or disputes (rel)
//	m_cid    the ids of the charges linked to effects, that a refund or
//	         dispute linking to nothing names
//	m_part   the records, each with its partition key: the key of the
//	         effect its transaction links to, else its own id
//
// A record's transaction is (provider, kind, tid, own): tid is its id, or
// its intent's charge, or its intent; own numbers a record with neither,
// which is a transaction of its own; a dispute's reinstatement (+) is
// another transaction than its withdrawal. Text that is ordered (a smallest key,
// the bounds of a partition) is compared byte by byte (COLLATE "C"), as Go
// compares strings; columns keep the database's collation, so that
// equality can use its indexes.
const (
	matchSetup = `SET work_mem = '256MB';
SET jit = off;
SET temp_buffers = '256MB';
CREATE TEMP TABLE m_early AS SELECT ` + matchRecordCols + ` FROM evidence WITH NO DATA`

	// m_eff and m_part are tables of this connection; when the run's
	// partitions are distributed they are views of the run's staged rows
	// instead (its id in the setting reconcile.run_id, which the staged
	// rows take as their default), where workers read them.
	matchEffTable = `CREATE TEMP TABLE m_eff (key text NOT NULL, provider text NOT NULL, step text NOT NULL, kind text NOT NULL,
  status text NOT NULL, external_id text, created_at timestamptz NOT NULL, amount text, currency text, request text, class text,
  since timestamptz, final boolean NOT NULL)`
	matchEffStaged = `CREATE TEMP VIEW m_eff AS SELECT key, provider, step, kind, status, external_id, created_at, amount, currency, request, class,
  since, final FROM stage_effect WHERE run_id = current_setting('reconcile.run_id')`
	matchPartStaged = `CREATE TEMP VIEW m_part AS SELECT pkey, linked, mine, source_id, line, provider, kind, tx_id, amount_minor, currency,
  occurred_at, pending, failed, effect_key, parent_effect_key, payment_intent, parent_tx_id
FROM stage_record WHERE run_id = current_setting('reconcile.run_id')`

	// matchWriterSetup prepares a connection that records confirmations.
	matchWriterSetup = `CREATE TEMP TABLE IF NOT EXISTS m_conf (key text NOT NULL, external_id text NOT NULL, fresh boolean NOT NULL) ON COMMIT DELETE ROWS`

	// matchClosed says whether any effect is closed (final or abandoned):
	// only then can the run's evidence name one back into scope.
	matchClosed = `SELECT EXISTS (SELECT 1 FROM effect_state WHERE final) OR EXISTS (SELECT 1 FROM effect WHERE status = 'abandoned')`

	// matchEffect selects what the matcher reads of an effect: of its
	// request only the amount and the currency (the whole request when it
	// is not an object, for the matcher to reject).
	matchEffect = `SELECT e.key, e.provider, e.step, coalesce(k.kind, ''), e.status, e.external_id, e.created_at,
  CASE WHEN jsonb_typeof(e.request) = 'object' THEN (e.request->'amount')::text END,
  CASE WHEN jsonb_typeof(e.request) = 'object' THEN (e.request->'currency')::text END,
  CASE WHEN jsonb_typeof(e.request) <> 'object' THEN e.request::text END,
  st.class, st.since, coalesce(st.final, false)
FROM effect e LEFT JOIN effect_state st ON st.key = e.key LEFT JOIN unnest($1::text[], $2::text[]) AS k(step, kind) ON k.step = e.step`

	// matchScopeOpen takes every effect not finally reconciled and not
	// abandoned (matchScopeNamed, below, adds the closed ones the run names).
	matchScopeOpen = `INSERT INTO m_eff ` + matchEffect + ` WHERE e.status <> 'abandoned' AND st.final IS NOT TRUE`

	// matchRecords are the records matched: the run's ($1 its sources) and
	// the earlier ones, of the kinds that link ($2), as r.
	matchRecords = `(SELECT true AS mine, ev.source_id, ev.seq, ev.line, ev.provider, ev.kind, ev.tx_id, ev.amount_minor, ev.currency,
    ev.occurred_at, ev.pending, ev.failed, ev.effect_key, ev.parent_effect_key, ev.payment_intent, ev.parent_tx_id
  FROM evidence ev WHERE ev.source_id = ANY($1) AND ev.kind = ANY($2)
  UNION ALL SELECT false, m.* FROM m_early m WHERE m.kind = ANY($2)) r`

	// matchTxOf joins a record (r) with its intent's charge ($3 is the
	// charge kind); matchTid and matchOwn are its transaction's id. When no
	// record needs its intent's charge (m_coi is empty, as it mostly is),
	// matchTxOfNone and matchTidNone spare the join.
	matchTxOf     = ` LEFT JOIN m_coi c ON r.kind = $3 AND r.tx_id = '' AND c.provider = r.provider AND c.payment_intent = r.payment_intent`
	matchTid      = `coalesce(nullif(r.tx_id, ''), c.tx_id, r.payment_intent) || CASE WHEN r.kind = 'dispute' AND r.amount_minor > 0 THEN '+' ELSE '' END`
	matchTxOfNone = ` LEFT JOIN (SELECT $3::text AS tx_id) c ON false`
	matchTidNone  = `coalesce(nullif(r.tx_id, ''), r.payment_intent) || CASE WHEN r.kind = 'dispute' AND r.amount_minor > 0 THEN '+' ELSE '' END`
	matchOwn      = `CASE WHEN r.tx_id = '' AND r.payment_intent = '' THEN r.source_id << 32 | r.seq ELSE 0 END`

	// matchChargeOfIntent gives a charge record that names only its
	// payment intent the id of the first charge record (in source and line
	// order) of that intent, as matcher.Transactions does.
	matchChargeOfIntent = `CREATE TEMP TABLE m_coi AS
SELECT DISTINCT ON (r.provider, r.payment_intent) r.provider, r.payment_intent, r.tx_id
FROM ` + matchRecords + ` JOIN source s ON s.id = r.source_id
WHERE r.kind = $3 AND r.tx_id <> '' AND (r.provider, r.payment_intent) IN (
  SELECT r.provider, r.payment_intent FROM ` + matchRecords + ` WHERE r.kind = $3 AND r.tx_id = '' AND r.payment_intent <> '')
ORDER BY r.provider, r.payment_intent, s.uri COLLATE "C", r.line, r.tx_id COLLATE "C"`

	// matchTransactions links each transaction by effect key: the smallest
	// key any of its records names of an effect in scope of the same
	// provider whose step makes its kind. It keeps the payment intent and
	// parent ids its records name, for the links by id, and for a refund or
	// dispute the keys of charge effects it names (ckey, and its payment's
	// key pay_key), for matchRelated.
	matchTransactions = `CREATE TEMP TABLE m_tx AS
SELECT r.provider, r.kind, ` + matchTid + ` AS tid, ` + matchOwn + ` AS own,
  min(e.key COLLATE "C") FILTER (WHERE e.kind = r.kind) AS link, max(e.key COLLATE "C") FILTER (WHERE e.kind = r.kind) AS link_hi,
  min(e.key COLLATE "C") FILTER (WHERE e.kind = $3 AND r.kind IN ('refund', 'dispute')) AS ckey,
  min(r.parent_effect_key COLLATE "C") FILTER (WHERE r.parent_effect_key <> '') COLLATE "default" AS pay_key, NULL::text COLLATE "C" AS rel, false AS seen,
  min(r.payment_intent COLLATE "C") FILTER (WHERE r.payment_intent <> '') COLLATE "default" AS pi,
  max(r.payment_intent COLLATE "C") FILTER (WHERE r.payment_intent <> '') COLLATE "default" AS pi_hi,
  min(r.parent_tx_id COLLATE "C") FILTER (WHERE r.parent_tx_id <> '') COLLATE "default" AS parent,
  max(r.parent_tx_id COLLATE "C") FILTER (WHERE r.parent_tx_id <> '') COLLATE "default" AS parent_hi
FROM ` + matchRecords + matchTxOf + `
LEFT JOIN m_eff e ON e.key = r.effect_key AND e.provider = r.provider
GROUP BY 1, 2, 3, 4`

	// matchConflicts lists, for each transaction whose records name two
	// effects in scope by key, those effects: whichever partition holds
	// the transaction, the matcher defers them all.
	matchConflicts = `SELECT DISTINCT e.key, t.tid FROM ` + matchRecords + matchTxOf + `
JOIN m_tx t ON t.provider = r.provider AND t.kind = r.kind AND t.tid = ` + matchTid + ` AND t.own = ` + matchOwn + `
JOIN m_eff e ON e.key = r.effect_key AND e.provider = r.provider AND e.kind = r.kind
WHERE t.link <> t.link_hi`

	// matchFirstIDs settles, for the rare transaction whose records name
	// different payment intents or parents, the one the matcher links (or,
	// for a charge, relates its refunds) by: that of its first record in
	// source, line and content order.
	matchFirstIDs = `UPDATE m_tx t SET pi = f.pi FROM (
  SELECT DISTINCT ON (r.provider, r.kind, ` + matchTid + `) r.provider, r.kind, ` + matchTid + ` AS tid, r.payment_intent AS pi
  FROM ` + matchRecords + matchTxOf + ` JOIN source s ON s.id = r.source_id
  WHERE r.payment_intent <> '' AND (r.provider, r.kind, ` + matchTid + `) IN (SELECT provider, kind, tid FROM m_tx WHERE (link IS NULL OR kind = $3) AND own = 0 AND pi <> pi_hi)
  ORDER BY r.provider, r.kind, ` + matchTid + `, s.uri COLLATE "C", r.line, r.tx_id COLLATE "C", r.amount_minor, r.currency COLLATE "C",
    r.occurred_at NULLS FIRST, r.effect_key COLLATE "C", r.payment_intent COLLATE "C") f
WHERE (t.link IS NULL OR t.kind = $3) AND t.own = 0 AND t.provider = f.provider AND t.kind = f.kind AND t.tid = f.tid`
	matchFirstParents = `UPDATE m_tx t SET parent = f.parent FROM (
  SELECT DISTINCT ON (r.provider, r.kind, ` + matchTid + `) r.provider, r.kind, ` + matchTid + ` AS tid, r.parent_tx_id AS parent
  FROM ` + matchRecords + matchTxOf + ` JOIN source s ON s.id = r.source_id
  WHERE r.parent_tx_id <> '' AND (r.provider, r.kind, ` + matchTid + `) IN (SELECT provider, kind, tid FROM m_tx WHERE (link IS NULL OR kind = $3) AND own = 0 AND parent <> parent_hi)
  ORDER BY r.provider, r.kind, ` + matchTid + `, s.uri COLLATE "C", r.line, r.tx_id COLLATE "C", r.amount_minor, r.currency COLLATE "C",
    r.occurred_at NULLS FIRST, r.effect_key COLLATE "C", r.payment_intent COLLATE "C", r.parent_tx_id COLLATE "C") f
WHERE (t.link IS NULL OR t.kind = $3) AND t.own = 0 AND t.provider = f.provider AND t.kind = f.kind AND t.tid = f.tid`

	// matchByID links the transactions no key links by their own id, then
	// their payment intent, then their parent, then the part of their id
	// after a slash (an Adyen modification reference), against the external
	// ids of the effects in scope of the same provider whose step makes the
	// transaction's kind: the greatest key when several share one.
	matchByID = `UPDATE m_tx t SET link = coalesce(
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key COLLATE "C" = e.key COLLATE "C"
    WHERE t.own = 0 AND e.external_id = t.tid AND e.provider = t.provider AND s.kind = t.kind ORDER BY s.key COLLATE "C" DESC LIMIT 1),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key COLLATE "C" = e.key COLLATE "C"
    WHERE e.external_id = t.pi AND e.provider = t.provider AND s.kind = t.kind ORDER BY s.key COLLATE "C" DESC LIMIT 1),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key COLLATE "C" = e.key COLLATE "C"
    WHERE e.external_id = t.parent AND e.provider = t.provider AND s.kind = t.kind ORDER BY s.key COLLATE "C" DESC LIMIT 1),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key COLLATE "C" = e.key COLLATE "C"
    WHERE t.own = 0 AND substr(t.tid, position('/' IN t.tid) + 1) <> '' AND position('/' IN t.tid) > 0
      AND e.external_id = substr(t.tid, position('/' IN t.tid) + 1) AND e.provider = t.provider AND s.kind = t.kind
    ORDER BY s.key COLLATE "C" DESC LIMIT 1))
WHERE t.link IS NULL`

	// matchRelated gives each refund or dispute that links to no effect
	// the charge effect it belongs to, as matcher's relater finds it: the
	// effect its payment's key names, else the smallest charge effect key
	// its records name, else the effect whose linked charge (m_cid: the
	// smallest key) or whose external id (the greatest key) is its parent,
	// then its payment intent. $1 is the charge kind. matchChargeIDs makes
	// m_cid first.
	matchChargeIDs = `CREATE TEMP TABLE m_cid AS
SELECT c.provider, x.id, min(c.link COLLATE "C") AS link FROM m_tx c
CROSS JOIN LATERAL (VALUES (nullif(c.tid, '')), (c.pi), (c.parent),
  (CASE WHEN c.own = 0 AND position('/' IN c.tid) > 0 THEN nullif(substr(c.tid, position('/' IN c.tid) + 1), '') END)) AS x(id)
WHERE c.kind = $1 AND c.link IS NOT NULL AND x.id IN (
  SELECT parent FROM m_tx WHERE link IS NULL AND kind IN ('refund', 'dispute') UNION SELECT pi FROM m_tx WHERE link IS NULL AND kind IN ('refund', 'dispute'))
GROUP BY 1, 2`
	// Each lookup goes through an index: m_eff's on key COLLATE "C", and
	// the effect table's on external_id, as matchByID's do; a lookup by a
	// column of m_eff alone would scan it once per refund.
	matchRelated = `UPDATE m_tx t SET rel = coalesce(
  (SELECT s.key FROM m_eff s WHERE s.key COLLATE "C" = t.pay_key COLLATE "C" AND s.provider = t.provider AND s.kind = $1),
  t.ckey,
  (SELECT c.link FROM m_cid c WHERE c.provider = t.provider AND c.id = t.parent),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key COLLATE "C" = e.key COLLATE "C"
    WHERE e.external_id = t.parent AND e.provider = t.provider AND s.kind = $1 ORDER BY s.key COLLATE "C" DESC LIMIT 1),
  (SELECT c.link FROM m_cid c WHERE c.provider = t.provider AND c.id = t.pi),
  (SELECT s.key FROM effect e JOIN m_eff s ON s.key COLLATE "C" = e.key COLLATE "C"
    WHERE e.external_id = t.pi AND e.provider = t.provider AND s.kind = $1 ORDER BY s.key COLLATE "C" DESC LIMIT 1))
WHERE t.link IS NULL AND t.kind IN ('refund', 'dispute')`

	// matchSeen marks the transactions that link to nothing and that
	// earlier evidence holds: they were reported when they were first
	// seen (and their effect, closed since, is not reopened by them), so
	// they are no part of this run.
	matchSeen = `UPDATE m_tx t SET seen = true WHERE t.link IS NULL AND t.rel IS NULL AND t.own = 0
  AND EXISTS (SELECT 1 FROM evidence o WHERE o.tx_id = t.tid AND o.tx_id <> '' AND o.provider = t.provider AND o.source_id <> ALL($1))`

	// matchPartKeys gives every record the key of its partition. A
	// transaction that links to nothing is placed by its own id; a record
	// of its own by its source and line, so that the records of one line
	// that link to nothing stay together.
	matchPartKeys = `SELECT coalesce(t.link, t.rel, (CASE WHEN t.own = 0 THEN t.tid ELSE (SELECT uri FROM source WHERE id = r.source_id) || ':' || r.line END) COLLATE "C") AS pkey,
  coalesce(t.link, t.rel) IS NOT NULL AS linked, r.mine, r.source_id, r.line, r.provider, r.kind, r.tx_id, r.amount_minor, r.currency, r.occurred_at,
  r.pending, r.failed, r.effect_key, r.parent_effect_key, r.payment_intent, r.parent_tx_id
FROM ` + matchRecords + matchTxOf + `
JOIN m_tx t ON t.provider = r.provider AND t.kind = r.kind AND t.tid = ` + matchTid + ` AND t.own = ` + matchOwn + `
WHERE NOT t.seen`

	// matchBounds cuts the keys into partitions of about $1 effects and $1
	// transactions that link to nothing.
	matchBounds = `SELECT k FROM (SELECT key COLLATE "C" AS k, row_number() OVER (ORDER BY key COLLATE "C") AS n FROM m_eff) e WHERE n % $1 = 0
UNION
SELECT k FROM (SELECT pkey AS k, row_number() OVER (ORDER BY pkey) AS n FROM m_part WHERE NOT linked) u WHERE n % $1 = 0
ORDER BY 1`

	// matchRecordNew, matchRecordStates and matchRecordConfirmed record a
	// partition's confirmations (in m_conf), as RecordFindings records
	// confirmed findings. The states of effects that had none (fresh) are
	// inserted without the cost of ON CONFLICT; should another writer have
	// given one a state meanwhile, the upsert does them all instead.
	matchRecordNew = `INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
SELECT key, $3, true, $1, $2, $2 FROM m_conf WHERE fresh`
	matchRecordStates = `INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
SELECT key, $3, true, $1, $2, $2 FROM m_conf WHERE $4 OR NOT fresh
ON CONFLICT (key) DO UPDATE SET class = EXCLUDED.class, final = EXCLUDED.final, run_id = EXCLUDED.run_id,
  classified_at = EXCLUDED.classified_at,
  since = CASE WHEN effect_state.class = EXCLUDED.class THEN effect_state.since ELSE EXCLUDED.since END`
	matchRecordConfirmed = `UPDATE effect e SET status = 'confirmed', external_id = coalesce(e.external_id, c.external_id), confirmed_at = $1
FROM m_conf c WHERE c.external_id <> '' AND e.key = c.key AND e.status = 'attempted'`
)

// matchEarlier copies the earlier records that name an effect in scope
// by key (their own, or their payment's) or by its external id. Each
// branch probes its partial index with the keys or ids of the effects
// in scope, so that its cost follows the scope, not the evidence.
var matchEarlier = `INSERT INTO m_early ` + matchEarlierBy("effect_key", "key") + `
UNION ` + matchEarlierBy("parent_effect_key", "key") + `
UNION ` + matchEarlierBy("tx_id", "external_id") + `
UNION ` + matchEarlierBy("payment_intent", "external_id") + `
UNION ` + matchEarlierBy("parent_tx_id", "external_id")

// matchRecordCols are the columns of evidence that the matching reads of
// a record.
const matchRecordCols = `source_id, seq, line, provider, kind, tx_id, amount_minor, currency, occurred_at, pending, failed, effect_key,
  parent_effect_key, payment_intent, parent_tx_id`

// matchEarlierBy selects the earlier records whose column col (which has
// a partial index where it is not empty) is the effect column of an effect
// in scope: probed with the array of those values, by index.
func matchEarlierBy(col, effectCol string) string {
	return `SELECT ` + matchRecordCols + ` FROM evidence WHERE source_id <> ALL($1) AND ` + col + ` <> ''
  AND ` + col + ` = ANY(ARRAY(SELECT ` + effectCol + ` FROM m_eff WHERE ` + effectCol + ` <> ''))`
}

// matchNamed lists every closed effect (abandoned, or final) that a
// record of the run ($1: its sources) names by key or by external id, when
// that record is of a transaction no earlier record holds: a late
// duplicate re-opens a confirmed effect, a report read again does not. The
// candidates are the effects the run's records name that are not in scope
// already (mostly none: what a night names is mostly open); only for those
// is it asked, by index, whether a record naming them is new.
// matchScopeNamed then adds them to the scope, when there are any.
var matchNamed = `CREATE TEMP TABLE m_named AS
SELECT c.key FROM (
    (SELECT effect_key AS key FROM evidence WHERE source_id = ANY($1) AND effect_key <> ''
     UNION SELECT parent_effect_key FROM evidence WHERE source_id = ANY($1) AND parent_effect_key <> ''
     EXCEPT SELECT key FROM m_eff)
    UNION
    (SELECT key FROM effect WHERE external_id = ANY(ARRAY(
       SELECT tx_id FROM evidence WHERE source_id = ANY($1) AND tx_id <> ''
       UNION SELECT payment_intent FROM evidence WHERE source_id = ANY($1) AND payment_intent <> ''
       UNION SELECT parent_tx_id FROM evidence WHERE source_id = ANY($1) AND parent_tx_id <> ''))
     EXCEPT SELECT key FROM m_eff)) c
JOIN effect n ON n.key = c.key
WHERE ` + newRecordNaming("effect_key", "n.key") + `
  OR ` + newRecordNaming("parent_effect_key", "n.key") + `
  OR ` + newRecordNaming("tx_id", "n.external_id") + `
  OR ` + newRecordNaming("payment_intent", "n.external_id") + `
  OR ` + newRecordNaming("parent_tx_id", "n.external_id")

const matchScopeNamed = `INSERT INTO m_eff ` + matchEffect + `
WHERE e.key = ANY(ARRAY(SELECT key FROM m_named)) AND (e.status = 'abandoned' OR st.final)`

// newRecordNaming says whether a record of the run names value in col
// and is of a transaction no earlier record holds. source_id + 0 keeps
// the planner on col's index; OFFSET 0 makes the earlier-record check one
// probe of evidence_tx_id, not a hash of every earlier tx_id.
func newRecordNaming(col, value string) string {
	return `EXISTS (SELECT 1 FROM evidence x WHERE x.` + col + ` = ` + value + ` AND x.` + col + ` <> '' AND x.source_id + 0 = ANY($1)
    AND (x.tx_id = '' OR NOT EXISTS (SELECT 1 FROM evidence o WHERE o.tx_id = x.tx_id AND o.tx_id <> '' AND o.provider = x.provider
      AND o.source_id <> ALL($1) OFFSET 0)))`
}
