package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"reconcile"
	"reconcile/ledgerdb"
)

// Coverage implements ledgerdb.Store.
func (s *Store) Coverage(ctx context.Context, sourceIDs []int64) ([]ledgerdb.CoverageEnd, error) {
	rows, err := s.pool.Query(ctx, `SELECT provider, kind, max(occurred_at) FROM evidence WHERE source_id = ANY($1)
		GROUP BY provider, kind ORDER BY provider, kind`, nonNil(sourceIDs))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerdb.CoverageEnd, error) {
		var (
			c    ledgerdb.CoverageEnd
			kind string
			end  *time.Time
		)
		err := r.Scan(&c.Provider, &kind, &end)
		c.Kind = reconcile.Kind(kind)
		if end != nil {
			c.End = end.UTC()
		}
		return c, err
	})
}

// MatchPartitions implements ledgerdb.Store. It works on connections of
// its own: one reads, in temporary tables that vanish with it (see
// match_sql.go), the other records, so that PostgreSQL reads the next
// partition and records the last while match classifies this one.
func (s *Store) MatchPartitions(ctx context.Context, p *ledgerdb.MatchParams, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("match run %s: %w", p.RunID, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m := &matching{conn: conn, p: p, now: s.now(), uris: map[int64]string{}, hook: map[int64]bool{}, conflict: map[string][]string{},
		strs: map[string]string{}}
	sum, err := m.run(ctx, s, match)
	if err != nil {
		return nil, fmt.Errorf("match run %s: %w", p.RunID, err)
	}
	return sum, nil
}

// matching is one run's matching.
type matching struct {
	conn *pgx.Conn
	p    *ledgerdb.MatchParams
	now  time.Time
	uris map[int64]string // source id → URI, of every source a record comes from
	hook map[int64]bool   // the sources whose records are webhook events
	// conflict gives the effects named by transactions in conflict, with
	// those transactions' ids.
	conflict map[string][]string
	strs     map[string]string // the providers, kinds and currencies seen, so that each is stored once
	// effects and records are how many the run has in all.
	effects, records int
	// staged is the run id when the partitions are read from the run's
	// staged rows (distribute.go), not from this connection's tables.
	staged  string
	worker  string    // the process that matches a staged partition
	started time.Time // when it began to read it
}

// read is a partition as read, with the keys of its effects that had no
// state yet; confirmed is what match made of it.
type read struct {
	part      *ledgerdb.Partition
	fresh     map[string]bool
	confirmed []ledgerdb.Confirmation
}

// run links, then reads, matches and records the partitions as a pipeline
// of three goroutines with a partition between each: memory holds a few
// partitions at most.
func (m *matching) run(ctx context.Context, s *Store, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	sum := &ledgerdb.MatchSummary{}
	if err := m.prepare(ctx, sum); err != nil {
		return nil, err
	}
	bounds, err := m.bounds(ctx, sum)
	if err != nil {
		return nil, err
	}
	w, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	defer w.Close(context.WithoutCancel(ctx))
	if _, err := w.Exec(ctx, matchWriterSetup); err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	reads, matched := make(chan *read), make(chan *read, 1)
	g.Go(func() error {
		defer close(reads)
		for i := range sum.Partitions {
			r := &read{part: &ledgerdb.Partition{Index: i, Count: sum.Partitions}, fresh: map[string]bool{}}
			if err := m.read(gctx, m.conn, r, bounds[i]); err != nil {
				return err
			}
			select {
			case reads <- r:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		defer close(matched)
		for r := range reads {
			var err error
			if r.confirmed, err = match(r.part); err != nil {
				return err
			}
			r.part = nil
			select {
			case matched <- r:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		for r := range matched {
			var n int
			err := pgx.BeginFunc(gctx, w, func(tx pgx.Tx) (err error) {
				n, err = m.record(gctx, tx, r.confirmed, r.fresh)
				return err
			})
			if err != nil {
				return err
			}
			sum.Confirmed += n
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return sum, nil
}

// bound is the range of keys of one partition: from lo, included, to hi,
// excluded; nil is open.
type bound struct{ lo, hi *string }

// bounds cuts the linked keys into partitions, and counts them in sum.
func (m *matching) bounds(ctx context.Context, sum *ledgerdb.MatchSummary) ([]bound, error) {
	m.effects, m.records = sum.Effects, sum.Records
	rows, err := m.conn.Query(ctx, matchBounds, m.p.Size())
	if err != nil {
		return nil, err
	}
	cuts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make([]bound, len(cuts)+1)
	for i := range cuts {
		out[i].hi, out[i+1].lo = &cuts[i], &cuts[i]
	}
	sum.Partitions = len(out)
	return out, nil
}

// prepare links the run's evidence to the effects in scope and assigns
// every record its partition key, in temporary tables.
func (m *matching) prepare(ctx context.Context, sum *ledgerdb.MatchSummary) error {
	if err := analyzeStale(ctx, m.conn, m.p.Sources); err != nil {
		return err
	}
	steps, kinds := m.p.Steps()
	sources, linkKinds, charge := nonNil(m.p.Sources), m.p.LinkKinds(), string(reconcile.KindCharge)
	exec := func(sql string, args ...any) error {
		_, err := m.conn.Exec(ctx, sql, args...)
		return err
	}
	var closed, earlier bool
	if err := m.conn.QueryRow(ctx, matchClosed).Scan(&closed); err != nil {
		return err
	}
	if err := m.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM source WHERE id <> ALL($1))`, sources).Scan(&earlier); err != nil {
		return err
	}
	if err := exec(matchSetup); err != nil {
		return err
	}
	effTable := matchEffTable
	if m.staged != "" {
		if _, err := m.conn.Exec(ctx, `SELECT set_config('reconcile.run_id', $1, false)`, m.staged); err != nil {
			return err
		}
		effTable = matchEffStaged
	}
	if err := exec(effTable); err != nil {
		return err
	}
	if err := exec(matchScopeOpen, steps, kinds); err != nil {
		return err
	}
	if closed {
		if err := exec(matchNamed, sources); err != nil {
			return err
		}
		var named bool
		if err := m.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM m_named)`).Scan(&named); err != nil {
			return err
		}
		if named {
			if err := exec(matchScopeNamed, steps, kinds); err != nil {
				return err
			}
		}
		if err := exec(`DROP TABLE m_named`); err != nil {
			return err
		}
	}
	index := `CREATE INDEX ON m_eff (key COLLATE "C"); ANALYZE m_eff (key, provider, kind, external_id)`
	if m.staged != "" {
		index = `ANALYZE stage_effect (run_id, key, provider, kind, external_id)`
	}
	if err := exec(index); err != nil {
		return err
	}
	if earlier {
		if err := exec(matchEarlier, sources); err != nil {
			return err
		}
		if err := exec(`ANALYZE m_early (provider, kind, tx_id, payment_intent, effect_key)`); err != nil {
			return err
		}
	}
	if err := exec(matchChargeOfIntent, sources, linkKinds, charge); err != nil {
		return err
	}
	var intentOnly bool
	if err := m.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM m_coi)`).Scan(&intentOnly); err != nil {
		return err
	}
	// Most runs have no charge record that names only its intent: their
	// statements spare the join with m_coi.
	tx := func(sql string) string {
		if intentOnly {
			return sql
		}
		return strings.ReplaceAll(strings.ReplaceAll(sql, matchTxOf, matchTxOfNone), matchTid, matchTidNone)
	}
	if err := exec(tx(matchTransactions), sources, linkKinds, charge); err != nil {
		return err
	}
	if err := exec(`ANALYZE m_tx (provider, kind, tid, own, link)`); err != nil {
		return err
	}
	var unlinked, ambiguousIntent, ambiguousParent int
	var loose bool // refunds or disputes that link to no effect
	if err := m.conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE link IS NULL), count(*) FILTER (WHERE own = 0 AND pi <> pi_hi),
		count(*) FILTER (WHERE own = 0 AND parent <> parent_hi), coalesce(bool_or(link IS NULL AND kind IN ('refund', 'dispute')), false)
		FROM m_tx WHERE link IS NULL OR kind = $1`, charge).Scan(&unlinked, &ambiguousIntent, &ambiguousParent, &loose); err != nil {
		return err
	}
	if ambiguousIntent > 0 {
		if err := exec(tx(matchFirstIDs), sources, linkKinds, charge); err != nil {
			return err
		}
	}
	if ambiguousParent > 0 {
		if err := exec(tx(matchFirstParents), sources, linkKinds, charge); err != nil {
			return err
		}
	}
	if unlinked > 0 {
		if err := exec(matchByID); err != nil {
			return err
		}
	}
	if loose {
		if err := exec(matchChargeIDs, charge); err != nil {
			return err
		}
		if err := exec(`CREATE INDEX ON m_cid (id, provider); ANALYZE m_cid`); err != nil {
			return err
		}
		if err := exec(matchRelated, charge); err != nil {
			return err
		}
	}
	if err := m.conflicts(ctx, tx(matchConflicts), sources, linkKinds, charge); err != nil {
		return err
	}
	if earlier && unlinked > 0 {
		if err := exec(matchSeen, sources); err != nil {
			return err
		}
	}
	parts, index := `CREATE TEMP TABLE m_part AS `, `CREATE INDEX ON m_part (pkey); ANALYZE m_part (pkey, linked)`
	if m.staged != "" {
		if err := exec(matchPartStaged); err != nil {
			return err
		}
		parts, index = `INSERT INTO m_part `, `ANALYZE stage_record (run_id, pkey, linked)`
	}
	if err := exec(tx(parts+matchPartKeys), sources, linkKinds, charge); err != nil {
		return err
	}
	if err := exec(`DROP TABLE IF EXISTS m_cid; DROP TABLE m_tx, m_coi, m_early; ` + index); err != nil {
		return err
	}
	// The sources the records come from, and how many there are of each.
	rows, err := m.conn.Query(ctx, `SELECT r.source_id, s.uri, s.format, r.n FROM (SELECT source_id, count(*) AS n FROM m_part GROUP BY source_id) r
		JOIN source s ON s.id = r.source_id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			id          int64
			uri, format string
			n           int
		)
		if err := rows.Scan(&id, &uri, &format, &n); err != nil {
			rows.Close()
			return err
		}
		m.uris[id] = uri
		m.hook[id] = slices.Contains(m.p.WebhookFormats, format)
		sum.Records += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return m.conn.QueryRow(ctx, `SELECT count(*) FROM m_eff`).Scan(&sum.Effects)
}

// conflicts reads which effects in scope are named by a transaction whose
// records name two of them: few, and none on most nights.
func (m *matching) conflicts(ctx context.Context, sql string, args ...any) error {
	var found bool
	if err := m.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM m_tx WHERE link <> link_hi)`).Scan(&found); err != nil || !found {
		return err
	}
	rows, err := m.conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key, tid string
		if err := rows.Scan(&key, &tid); err != nil {
			return err
		}
		m.conflict[key] = append(m.conflict[key], tid)
	}
	return rows.Err()
}

// read fills part with the effects and records whose keys fall in b, from
// the temporary tables of this connection's matching or, when m.staged
// is set, from the run's staged rows.
func (m *matching) read(ctx context.Context, q querier, r *read, b bound) error {
	part := r.part
	effects, records, conflicts := "m_eff", "m_part", "NULL::text[]"
	if m.staged != "" {
		effects, records, conflicts = "stage_effect", "stage_record", "conflicts"
	}
	var args []any
	where := func(col string) string {
		w := "true"
		args = args[:0]
		if m.staged != "" {
			w = "run_id = $1"
			args = append(args, m.staged)
		}
		if b.lo != nil {
			args = append(args, *b.lo)
			w += fmt.Sprintf(` AND %s COLLATE "C" >= $%d`, col, len(args))
		}
		if b.hi != nil {
			args = append(args, *b.hi)
			w += fmt.Sprintf(` AND %s COLLATE "C" < $%d`, col, len(args))
		}
		return w
	}
	// Partitions hold about Size effects and a third more records: sized
	// once, the slices do not leave the garbage of their growth.
	part.Effects = make([]ledgerdb.ScopedEffect, 0, min(m.p.Size(), m.effects))
	part.Evidence = make([]reconcile.Evidence, 0, min(m.p.Size()*3/2, m.records))
	rows, err := q.Query(ctx, `SELECT key, provider, step, status, coalesce(external_id, ''), created_at, amount, currency, request,
		coalesce(class, ''), since, final, `+conflicts+` FROM `+effects+` WHERE `+where("key"), args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			e                       ledgerdb.ScopedEffect
			status, class           string
			amount, currency, whole *string
			since                   *time.Time
		)
		if err := rows.Scan(&e.Key, &e.Provider, &e.Step, &status, &e.ExternalID, &e.CreatedAt, &amount, &currency, &whole, &class, &since,
			&e.Final, &e.Conflicts); err != nil {
			rows.Close()
			return err
		}
		e.Provider, e.Step = m.intern(e.Provider), m.intern(e.Step)
		e.Status, e.State, e.CreatedAt = reconcile.Status(m.intern(status)), reconcile.Class(m.intern(class)), e.CreatedAt.UTC()
		e.Request = ledgerdb.PlainRequest(amount, currency, whole)
		if since != nil {
			e.Since = since.UTC()
		}
		if e.State == "" {
			r.fresh[e.Key] = true
		}
		if m.staged == "" {
			e.Conflicts = m.conflict[e.Key]
		}
		part.Effects = append(part.Effects, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT mine, source_id, line, provider, kind, tx_id, amount_minor, currency, occurred_at, pending, failed,
		effect_key, parent_effect_key, payment_intent, parent_tx_id FROM `+records+` WHERE `+where("pkey"), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e        reconcile.Evidence
			mine     bool
			source   int64
			kind     string
			occurred *time.Time
		)
		if err := rows.Scan(&mine, &source, &e.Line, &e.Provider, &kind, &e.TxID, &e.Amount.Minor, &e.Amount.Currency, &occurred,
			&e.Pending, &e.Failed, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID); err != nil {
			return err
		}
		e.Provider, e.Kind, e.Amount.Currency = m.intern(e.Provider), reconcile.Kind(m.intern(kind)), m.intern(e.Amount.Currency)
		if occurred != nil {
			e.Time = occurred.UTC()
		}
		e.URI, e.Webhook = m.uris[source], m.hook[source]
		if mine {
			part.Evidence = append(part.Evidence, e)
		} else {
			part.Earlier = append(part.Earlier, e)
		}
	}
	return rows.Err()
}

// intern returns the one copy of a string that repeats across rows.
func (m *matching) intern(s string) string {
	if v, ok := m.strs[s]; ok {
		return v
	}
	m.strs[s] = s
	return s
}

// record writes a partition's confirmations in tx, whose connection has
// the temporary table m_conf, and returns how many attempted effects it
// confirmed. fresh holds the keys of the partition's effects that had no
// state.
func (m *matching) record(ctx context.Context, tx pgx.Tx, confs []ledgerdb.Confirmation, fresh map[string]bool) (int, error) {
	if len(confs) == 0 {
		return 0, nil
	}
	n := 0
	err := func() error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"m_conf"}, []string{"key", "external_id", "fresh"}, pgx.CopyFromSlice(len(confs), func(i int) ([]any, error) {
			return []any{confs[i].Key, confs[i].ExternalID, fresh[confs[i].Key]}, nil
		})); err != nil {
			return err
		}
		confirmed := string(reconcile.Confirmed)
		all := false // whether the upsert must do the fresh ones too
		err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			_, err := sp.Exec(ctx, matchRecordNew, m.p.RunID, m.now, confirmed)
			return err
		})
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation: a state was written meanwhile
			all, err = true, nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, matchRecordStates, m.p.RunID, m.now, confirmed, all); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, matchRecordConfirmed, m.now)
		n = int(tag.RowsAffected())
		return err
	}()
	return n, err
}

// analyzedColumns are the columns of each table the matching joins or
// filters on: the only ones whose statistics its plans need, and half
// the cost of analyzing the table whole.
var analyzedColumns = map[string]string{
	"effect":       "key, step, provider, status, external_id",
	"evidence":     "source_id, seq, provider, kind, tx_id, effect_key, parent_effect_key, payment_intent, parent_tx_id",
	"effect_state": "key, class, final",
}

// analyzeStale refreshes the planner's statistics of the tables the
// matching joins when they changed much since the last ANALYZE (a run's
// first ingest, a freshly loaded ledger): with stale ones the planner
// takes a million rows for a thousand and loops where it should hash.
func analyzeStale(ctx context.Context, conn *pgx.Conn, sources []int64) error {
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_class c LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
		WHERE c.oid IN ('effect'::regclass, 'evidence'::regclass, 'effect_state'::regclass)
		  AND (c.reltuples < 0 OR coalesce(st.n_mod_since_analyze, 0) > greatest(1000, c.reltuples / 10)
		       OR (c.oid = 'evidence'::regclass AND (SELECT coalesce(sum(evidence_count), 0) FROM source WHERE id = ANY($1)) > greatest(1000, c.reltuples / 10)))`,
		nonNil(sources))
	if err != nil {
		return err
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range stale {
		if _, err := conn.Exec(ctx, `ANALYZE `+pgx.Identifier{t}.Sanitize()+" ("+analyzedColumns[t]+")"); err != nil {
			return err
		}
	}
	return nil
}
