package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// CoverageList implements ledgerdb.Store.
// Hand-written, as is every statement of the matching in this file and match_sql.go.
func (s *Store) CoverageList(ctx context.Context, sourceIDs []int64) ([]ledgerdb.CoverageEnd, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT provider, kind, max(occurred_at) FROM evidence WHERE source_id IN (SELECT value FROM json_each(?))
		GROUP BY provider, kind ORDER BY provider, kind`, jsonList(sourceIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledgerdb.CoverageEnd
	for rows.Next() {
		var (
			c    ledgerdb.CoverageEnd
			kind string
			end  sql.NullString
		)
		if err := rows.Scan(&c.Provider, &kind, &end); err != nil {
			return nil, err
		}
		c.Kind = reconcile.Kind(kind)
		if c.End, err = parseTS(end); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// PartitionMatch implements ledgerdb.Store, in temporary tables on the
// store's one connection (see match_sql.go).
func (s *Store) PartitionMatch(ctx context.Context, p *ledgerdb.MatchParams, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	m := &matching{s: s, conn: conn, p: p, now: ts(s.now()), uris: map[int64]string{}, hook: map[int64]bool{}, strs: map[string]string{},
		kept: &s.kept}
	defer conn.ExecContext(context.WithoutCancel(ctx), matchTeardown)
	sum, err := m.run(ctx, match)
	if m.spill != nil {
		m.spill.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("match run %s: %w", p.RunID, err)
	}
	return sum, nil
}

// matching is one run's matching.
type matching struct {
	s    *Store
	conn *sql.Conn
	p    *ledgerdb.MatchParams
	now  string
	uris map[int64]string  // source id → URI, of every source a record comes from
	hook map[int64]bool    // the sources whose records are webhook events
	strs map[string]string // the providers, kinds and currencies seen, so that each is stored once
	kept *driver.Kept      // what this store's ingests kept of the run's records
	// spill holds the run's partitions, as prepare cut them.
	spill *driver.Spill
}

// run links, then reads, matches and records the partitions
// (driver.Pipeline), recording on m.conn.
func (m *matching) run(ctx context.Context, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	sum := &ledgerdb.MatchSummary{}
	if err := m.prepare(ctx, sum); err != nil {
		return nil, err
	}
	type work struct {
		part      *ledgerdb.Partition
		confirmed []ledgerdb.Confirmation
	}
	err := driver.Pipeline(ctx, sum.Partitions,
		func(_ context.Context, i int) (*work, error) {
			part, err := m.spill.Partition(i)
			return &work{part: part}, err
		},
		func(w *work) (*work, error) {
			var err error
			w.confirmed, err = match(w.part)
			w.part = nil
			return w, err
		},
		func(ctx context.Context, w *work) error {
			n, err := m.record(ctx, w.confirmed)
			sum.Confirmed += n
			return err
		})
	if err != nil {
		return nil, err
	}
	return sum, nil
}

// prepare fetches the effects in scope and the records, in temporary
// tables, and cuts them into partitions (cut), every read in one snapshot:
// a run that found no closed effect must not read the scope after another
// run closed some, for its evidence would then not name them back into
// it, and their records would look unexpected.
// The evidence indexes a large ingest deferred are built first when those
// reads look them up, else once it has cut (ledgerdb.MatchParams.Indexes).
func (m *matching) prepare(ctx context.Context, sum *ledgerdb.MatchSummary) error {
	var closed, earlier bool
	if err := m.conn.QueryRowContext(ctx, `SELECT (`+matchClosed+`), (`+matchEarlierExists+`)`, jsonList(m.p.Sources)).Scan(&closed, &earlier); err != nil {
		return err
	}
	lookups := closed || earlier // the reads look the evidence indexes up
	if lookups && m.p.Indexes != nil {
		m.p.Indexes(true)
	}
	if _, err := m.conn.ExecContext(ctx, `BEGIN`); err != nil {
		return err
	}
	err := m.fetch(ctx, sum)
	if err == nil {
		_, err = m.conn.ExecContext(ctx, `COMMIT`)
	} else {
		m.conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	}
	if err == nil && !lookups && m.p.Indexes != nil { // read and cut: they are built beside the partitions
		m.p.Indexes(false)
	}
	return err
}

// fetch is prepare's reading, in its snapshot.
func (m *matching) fetch(ctx context.Context, sum *ledgerdb.MatchSummary) error {
	sources, linkKinds := jsonList(m.p.Sources), jsonList(m.p.LinkKinds())
	exec := func(q string, args ...any) error {
		_, err := m.conn.ExecContext(ctx, q, args...)
		return err
	}
	if err := exec(matchSetup); err != nil {
		return err
	}
	var closed bool // only then can the run's evidence name an effect back into scope
	if err := m.conn.QueryRowContext(ctx, matchClosed).Scan(&closed); err != nil {
		return err
	}
	if closed {
		if err := exec(matchNew, sources); err != nil {
			return err
		}
	}
	var earlier bool
	if err := m.conn.QueryRowContext(ctx, matchEarlierExists, sources).Scan(&earlier); err != nil {
		return err
	}
	sum.NoEarlier = !earlier
	if driver.ScopeRead != nil {
		driver.ScopeRead()
	}
	from, records := "("+matchScopeEffects+")", matchRecords
	if earlier {
		if err := exec(matchScope); err != nil {
			return err
		}
		from, records = "m_eff", matchRecords+" UNION ALL "+matchEarlier
	}
	rows, err := m.conn.QueryContext(ctx, `SELECT id, uri, format FROM source`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var uri, format string
		if err := rows.Scan(&id, &uri, &format); err != nil {
			rows.Close()
			return err
		}
		m.uris[id], m.hook[id] = uri, slices.Contains(m.p.WebhookFormats, format)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return m.cut(ctx, sum, matchEffects+from, records, linkKinds)
}

// cut reads every effect in scope (the query scope) and every record (the
// run's own as its ingest kept them, when it did, and the query records,
// of the kinds that link) into a Spill, which cuts them into partitions.
func (m *matching) cut(ctx context.Context, sum *ledgerdb.MatchSummary, scope, records, linkKinds string) error {
	spill, err := driver.NewSpill()
	if err != nil {
		return err
	}
	m.spill = spill
	rows, err := m.conn.QueryContext(ctx, scope)
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			e                      ledgerdb.ScopedEffect
			status, class, created string
			since                  string
			request                []byte
		)
		if err := rows.Scan(&e.Key, &e.Provider, &e.Step, &status, &e.ExternalID, &created, &request, &class, &since, &e.Final); err != nil {
			rows.Close()
			return err
		}
		e.Provider, e.Step = m.intern(e.Provider), m.intern(e.Step)
		e.Status, e.State = reconcile.Status(m.intern(status)), reconcile.Class(m.intern(class))
		if e.CreatedAt, err = parseTime(created); err == nil && since != "" {
			e.Since, err = parseTime(since)
		}
		e.Request = driver.ReducedRequest(request)
		if err == nil {
			err = spill.Effect(&e)
		}
		if err != nil {
			rows.Close()
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	taken, read := m.kept.Take(m.p.Sources)
	sum.Kept, err = spill.AddKept(taken, m.p.LinkKinds(), func(id int64) (string, bool, bool) {
		uri, ok := m.uris[id]
		return uri, m.hook[id], ok
	})
	if err != nil {
		return err
	}
	rows, err = m.conn.QueryContext(ctx, records, jsonList(m.p.Sources), linkKinds, jsonList(read))
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
			occurred sql.NullString
		)
		if err := rows.Scan(&mine, &source, &e.Line, &e.Provider, &kind, &e.TxID, &e.Amount.Minor, &e.Amount.Currency, &occurred,
			&e.Pending, &e.Failed, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID); err != nil {
			return err
		}
		e.Provider, e.Kind, e.Amount.Currency = m.intern(e.Provider), reconcile.Kind(m.intern(kind)), m.intern(e.Amount.Currency)
		e.URI, e.Webhook = m.uris[source], m.hook[source]
		if e.Time, err = parseTS(occurred); err == nil {
			err = spill.Record(&e, mine)
		}
		if err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return spill.Cut(m.p.Size(), sum)
}

// intern returns the one copy of a string that repeats across rows.
func (m *matching) intern(s string) string {
	if v, ok := m.strs[s]; ok {
		return v
	}
	m.strs[s] = s
	return s
}

// record writes a partition's confirmations in one transaction, and
// returns how many attempted effects it confirmed. Between statements the
// connection holds no read transaction open, so waiting here for another
// process's write lock blocks nobody.
func (m *matching) record(ctx context.Context, confs []ledgerdb.Confirmation) (n int, err error) {
	if len(confs) == 0 {
		return 0, nil
	}
	driver.SortByKey(confs)
	keys := make([]string, len(confs))
	var pairs []string // key, external id, in turn, of the confirmations that name one
	for i, c := range confs {
		keys[i] = c.Key
		if c.ExternalID != "" {
			pairs = append(pairs, c.Key, c.ExternalID)
		}
	}
	doc, err := json.Marshal(keys)
	if err != nil {
		return 0, err
	}
	tx, err := m.s.begin(ctx, m.conn)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	if _, err := tx.ExecContext(ctx, matchRecordStates, string(doc), string(reconcile.ClassConfirmed), m.p.RunID, m.now); err != nil {
		return 0, err
	}
	if len(pairs) > 0 {
		doc, err := json.Marshal(pairs)
		if err != nil {
			return 0, err
		}
		r, err := tx.ExecContext(ctx, matchRecordConfirmed, string(doc), m.now)
		if err != nil {
			return 0, err
		}
		k, _ := r.RowsAffected()
		n = int(k)
	}
	return n, tx.Commit()
}
