// classify.mjs is the DuckDB anchor of `reconcile bench --anchors`: it reads
// the bench's files (the effects CSV, the Stripe itemized report and, when
// given, the webhook dump), links each transaction to an effect the way the
// matcher does in its simplest form, classifies every effect and counts the
// unexpected transactions, all in SQL, and prints the counts and its own
// elapsed time as one JSON object on stdout.
//
//   node tools/duckdb/classify.mjs [--lag-hours 3] bench.effects.csv bench.itemized.csv [bench.events.jsonl]
//
// A file is told by its name: *.effects.csv holds the effects (key, step,
// provider, status, external_id, amount, currency, created_at), *.jsonl the
// webhook dump, any other *.csv the itemized report. Install the DuckDB Node
// API with `npm ci --prefix tools/duckdb` first.
//
// What it does not do: it keeps no state, reads no earlier evidence, knows
// only Stripe's reports and charge and refund effects, takes the smallest
// effect key a transaction's records name even when that effect does not
// make the transaction's kind, and applies none of the matcher's other rules
// (deferred, escalated, failed or pending transactions, currencies, fees,
// disputes). It is a floor for comparable work, not a second matcher.

import { DuckDBInstance } from '@duckdb/node-api';

const started = process.hrtime.bigint();

let lagHours = 3; // the bench's --lag 3h
const files = { effects: null, report: null, events: null };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--lag-hours') {
    lagHours = Number(args[++i]);
    if (!Number.isFinite(lagHours)) fail('--lag-hours: want a number of hours');
  } else if (a.endsWith('.effects.csv')) {
    files.effects = a;
  } else if (a.endsWith('.jsonl')) {
    files.events = a;
  } else if (a.endsWith('.csv')) {
    files.report = a;
  } else {
    fail(`${a}: want an effects CSV (*.effects.csv), an itemized report (*.csv) or a webhook dump (*.jsonl)`);
  }
}
if (!files.effects || !files.report) {
  fail('usage: classify.mjs [--lag-hours N] EFFECTS.effects.csv REPORT.csv [EVENTS.jsonl]');
}

function fail(msg) {
  process.stderr.write(`classify.mjs: ${msg}\n`);
  process.exit(2);
}

// lit quotes a file name as an SQL string literal.
const lit = (s) => `'${s.replaceAll("'", "''")}'`;

// Stripe writes amounts in the currency's major unit; the ledger's requests
// hold minor units. The world's currencies are eur, usd (two decimals), jpy
// (none) and kwd (three).
const scale = `CASE lower(currency) WHEN 'jpy' THEN 1 WHEN 'kwd' THEN 1000 ELSE 100 END`;

// The records: one row per line of the report, and one per event of the
// dump. A charge's effect key is
// payment_metadata[effect_key]; a refund's is refund_metadata[effect_key],
// and payment_metadata is then its charge's (the parent's). Amounts are
// compared without their sign, as the effects' requests hold them.
const reportRecords = `
  SELECT source_id AS tx, reporting_category AS kind,
         CASE reporting_category WHEN 'charge' THEN pkey WHEN 'refund' THEN rkey ELSE '' END AS effect_key,
         CASE WHEN reporting_category = 'refund' THEN pkey ELSE '' END AS parent_key,
         payment_intent_id AS intent,
         CASE WHEN charge_id <> source_id THEN charge_id ELSE '' END AS parent_tx,
         abs(round(gross * ${scale}))::BIGINT AS amount, lower(currency) AS currency, created_utc AS occurred
  FROM read_csv(${lit(files.report)}, header = true, auto_detect = false, columns = {
    'balance_transaction_id': 'VARCHAR', 'created_utc': 'TIMESTAMP', 'available_on_utc': 'VARCHAR',
    'currency': 'VARCHAR', 'gross': 'DECIMAL(18,3)', 'fee': 'VARCHAR', 'net': 'VARCHAR',
    'reporting_category': 'VARCHAR', 'source_id': 'VARCHAR', 'description': 'VARCHAR',
    'customer_facing_amount': 'VARCHAR', 'customer_facing_currency': 'VARCHAR', 'automatic_payout_id': 'VARCHAR',
    'charge_id': 'VARCHAR', 'payment_intent_id': 'VARCHAR', 'pkey': 'VARCHAR', 'rkey': 'VARCHAR'})`;
// The dump's events describe the same transactions again, in minor units.
const eventRecords = `
  SELECT o.id AS tx, o.object AS kind, coalesce(o.metadata.effect_key, '') AS effect_key, '' AS parent_key,
         coalesce(o.payment_intent, '') AS intent, coalesce(o.charge, '') AS parent_tx,
         o.amount AS amount, lower(o.currency) AS currency, make_timestamp(created * 1000000) AS occurred
  FROM (SELECT created, data.object AS o FROM read_json(${lit(files.events ?? '')}, format = 'newline_delimited', columns = {
    'id': 'VARCHAR', 'type': 'VARCHAR', 'created': 'BIGINT',
    'data': 'STRUCT(object STRUCT(id VARCHAR, object VARCHAR, amount BIGINT, currency VARCHAR, payment_intent VARCHAR, charge VARCHAR, metadata STRUCT(effect_key VARCHAR)))'}))`;

const statements = [
  `CREATE TEMP TABLE effects AS
   SELECT * FROM read_csv(${lit(files.effects)}, header = true, auto_detect = false, columns = {
     'key': 'VARCHAR', 'step': 'VARCHAR', 'provider': 'VARCHAR', 'status': 'VARCHAR', 'external_id': 'VARCHAR',
     'amount': 'BIGINT', 'currency': 'VARCHAR', 'created_at': 'TIMESTAMP'})
   WHERE status <> 'abandoned'`,
  `CREATE TEMP TABLE records AS ${reportRecords}${files.events ? ` UNION ALL ${eventRecords}` : ''}`,
  // A transaction is every record with its id.
  `CREATE TEMP TABLE txs AS
   SELECT tx, min(kind) AS kind, max(amount) AS amount, min(currency) AS currency,
          min(nullif(effect_key, '')) AS effect_key, min(nullif(parent_key, '')) AS parent_key,
          min(nullif(intent, '')) AS intent, min(nullif(parent_tx, '')) AS parent_tx
   FROM records WHERE kind IN ('charge', 'refund') AND coalesce(tx, '') <> '' GROUP BY tx`,
  // The end of coverage is the latest time in the evidence, the report's
  // closing fee line included; the cutoff is the lag before it.
  `CREATE TEMP TABLE coverage AS SELECT max(occurred) - to_seconds(${lagHours * 3600}) AS cutoff FROM records`,
  // A transaction links to the effect its key names, if that effect makes
  // its kind; else to the effect whose external id is its own id, else its
  // payment intent.
  `CREATE TEMP TABLE linked AS
   SELECT t.*, coalesce(k.key, i.key, p.key) AS link
   FROM txs t
   LEFT JOIN effects k ON k.key = t.effect_key AND k.step = t.kind
   LEFT JOIN effects i ON i.external_id = t.tx AND i.step = t.kind
   LEFT JOIN effects p ON p.external_id = t.intent AND p.step = t.kind`,
  // Each effect's class: two or more transactions are a duplicate, one of
  // another amount or currency a mismatch, none a missing effect when older
  // than the cutoff and a pending one otherwise.
  `CREATE TEMP TABLE classes AS
   SELECT e.key,
          CASE WHEN count(l.tx) >= 2 THEN 'duplicated'
               WHEN count(l.tx) = 1 AND (max(l.amount) <> e.amount OR max(l.currency) <> lower(e.currency)) THEN 'mismatched'
               WHEN count(l.tx) = 1 THEN 'confirmed'
               WHEN e.created_at < (SELECT cutoff FROM coverage) THEN 'missing'
               ELSE 'pending' END AS class
   FROM effects e LEFT JOIN linked l ON l.link = e.key
   GROUP BY e.key, e.amount, e.currency, e.created_at`,
];

// Unexpected: a transaction that links to no effect, unless it is a refund
// of one of ours (its parent key names an effect, or its charge links to
// one): a refund a person made is shown with its charge.
const countsSQL = `
  SELECT class, count(*) AS n FROM classes GROUP BY class
  UNION ALL
  SELECT 'unexpected', count(*) FROM linked l
  WHERE l.link IS NULL AND NOT (l.kind = 'refund' AND (
    l.parent_key IN (SELECT key FROM effects) OR
    l.parent_tx IN (SELECT tx FROM linked WHERE link IS NOT NULL)))`;

const instance = await DuckDBInstance.create(':memory:', {
  // Everything it needs is in the library; nothing is fetched.
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
});
const conn = await instance.connect();
for (const sql of statements) {
  await conn.run(sql);
}
const counts = { confirmed: 0, duplicated: 0, missing: 0, pending: 0, mismatched: 0, unexpected: 0 };
for (const row of (await conn.runAndReadAll(countsSQL)).getRowObjectsJS()) {
  counts[row.class] = Number(row.n);
}
const sizes = (await conn.runAndReadAll(`
  SELECT (SELECT count(*) FROM effects) AS effects, 
         (SELECT count(*) FROM records) AS records, (SELECT count(*) FROM txs) AS transactions,
         current_setting('threads') AS threads, version() AS version`)).getRowObjectsJS()[0];
const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
conn.closeSync();
instance.closeSync();

process.stdout.write(JSON.stringify({
  counts,
  effects: Number(sizes.effects),
  records: Number(sizes.records),
  transactions: Number(sizes.transactions),
  events: files.events !== null,
  threads: Number(sizes.threads),
  duckdb: sizes.version,
  elapsed_s: elapsed,
}) + '\n');
