package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// CoverageList implements ledgerdb.Store.
func (s *Store) CoverageList(ctx context.Context, sourceIDs []int64) ([]ledgerdb.CoverageEnd, error) {
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

// PartitionMatch implements ledgerdb.Store. It works on connections of
// its own: one fetches, into temporary tables that vanish with it (see
// match_sql.go) and from them into a driver.Spill; the other records,
// so that the next partition is read and the last recorded while match
// classifies this one. Its statements are hand-written (match_sql.go
// says why).
func (s *Store) PartitionMatch(ctx context.Context, p *ledgerdb.MatchParams, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("match run %s: %w", p.RunID, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m := &matching{conn: conn, p: p, now: s.now(), strs: map[string]string{}, kept: s.kept}
	sum, err := m.run(ctx, s, match)
	m.close()
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
	strs map[string]string // the providers, kinds and currencies seen, so that each is stored once
	kept *driver.Kept      // what this store's ingests kept of the run's records
	// spill holds the run's partitions, as prepare cut them.
	spill *driver.Spill
	// staged is the run id when the partitions are read from the run's
	// staged rows (distribute.go), not from the spill.
	staged  string
	worker  string    // the process that matches a staged partition
	started time.Time // when it began to read it
	// horizon is the oldest transaction the scope's snapshot could not
	// see, and open the keys of the effects in scope the run left without
	// a state (matchLeftOpen).
	horizon string
	open    []string
	// loose are the run's records that a later night finds by key alone
	// (migration 022), as the partitions showed them.
	loose driver.NamedRecords
	scan  []int64 // the run's sources read from the ledger, not kept
	// scopeRead, when set, is called once the effects in scope are read.
	scopeRead func()
}

// read is a partition as read; confirmed is what match made of it, and
// settle notes what record needs to know of those.
type read struct {
	part      *ledgerdb.Partition
	confirmed []ledgerdb.Confirmation
	fresh     []bool   // of each confirmation, whether its effect had no state as read
	attempted []bool   // of each confirmation, whether its effect was attempted as read
	open      []string // the keys of the effects that had no state and were not confirmed
	loose     []reconcile.Evidence
	maybe     []maybeLoose
	given     map[string]string // the external ids record gave attempted effects, by key
}

// settle sorts the confirmations by key and notes, from the partition as
// read, which of their effects had no state and which were attempted, and
// the effects left without a state.
func (r *read) settle() {
	driver.SortByKey(r.confirmed)
	effects := r.part.Effects
	confirmed := make([]bool, len(effects))
	r.fresh, r.attempted = make([]bool, len(r.confirmed)), make([]bool, len(r.confirmed))
	for j, c := range r.confirmed {
		if i, ok := r.part.Find(c.Key); ok {
			confirmed[i] = true
			r.fresh[j], r.attempted[j] = effects[i].State == "", effects[i].Status == reconcile.StatusAttempted
		}
	}
	for i := range effects {
		if !confirmed[i] && effects[i].State == "" {
			r.open = append(r.open, strings.Clone(effects[i].Key)) // not the whole row it was read from
		}
	}
}

// looseIn lists the run's records in part that name a parent (migration
// 023), and those that name an effect by key that a later night cannot
// find through that effect's external id: the partition, which holds
// every effect in scope that a record names, has no effect of that key,
// or one whose external id is neither the record's transaction nor its
// payment intent. An effect without an external id that a confirmation
// gives one (matchRecordConfirmed) may have one by then: maybe lists the
// records found through it, if it is.
func looseIn(part *ledgerdb.Partition, confirmed []ledgerdb.Confirmation) (loose []reconcile.Evidence, maybe []maybeLoose) {
	idOf := func(key string) string {
		if i, ok := part.Find(key); ok {
			return part.Effects[i].ExternalID
		}
		return ""
	}
	given := map[string]string{}
	for _, c := range confirmed {
		if idOf(c.Key) == "" && c.ExternalID != "" {
			given[c.Key] = c.ExternalID
		}
	}
	for i := range part.Evidence {
		e := &part.Evidence[i]
		parent := e.ParentEffectKey != "" || e.ParentTxID != ""
		if e.EffectKey == "" && !parent {
			continue
		}
		id, confirming := idOf(e.EffectKey), false
		if id == "" {
			id, confirming = given[e.EffectKey], true
		}
		switch {
		case parent || id == "" || id != e.TxID && id != e.PaymentIntent:
			loose = append(loose, *e)
		case confirming:
			maybe = append(maybe, maybeLoose{*e, id})
		}
	}
	return loose, maybe
}

// maybeLoose is a record that is loose unless its effect's external id
// became id.
type maybeLoose struct {
	reconcile.Evidence
	id string
}

// run links, then reads, matches and records the partitions
// (driver.Pipeline), reading on m.conn and recording on a connection of
// its own.
func (m *matching) run(ctx context.Context, s *Store, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	sum := &ledgerdb.MatchSummary{}
	if err := m.prepare(ctx, sum); err != nil {
		return nil, err
	}
	w, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	closeW := func() { w.Close(context.WithoutCancel(ctx)) }
	defer func() {
		if closeW != nil {
			closeW()
		}
	}()
	if _, err := w.Exec(ctx, matchWriterSetup); err != nil {
		return nil, err
	}
	err = driver.Pipeline(ctx, sum.Partitions,
		func(ctx context.Context, i int) (*read, error) {
			r := &read{part: &ledgerdb.Partition{Index: i, Count: sum.Partitions}}
			return r, m.read(ctx, m.conn, r)
		},
		func(r *read) (*read, error) {
			var err error
			r.confirmed, err = match(r.part)
			r.settle()
			r.loose, r.maybe = looseIn(r.part, r.confirmed)
			r.part = nil
			return r, err
		},
		func(ctx context.Context, r *read) error {
			err := pgx.BeginFunc(ctx, w, func(tx pgx.Tx) error {
				n, err := m.record(ctx, tx, r)
				sum.Confirmed += n
				return err
			})
			m.open = append(m.open, r.open...)
			for i := range r.loose {
				m.loose.Add(&r.loose[i])
			}
			for i := range r.maybe {
				if x := &r.maybe[i]; r.given[x.EffectKey] != x.id {
					m.loose.Add(&x.Evidence)
				}
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	for x := range m.spill.Unlinked.All() {
		m.loose.Add(x)
	}
	loose := &m.loose
	sortOwn := func(db beginner) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return m.sortOwn(ctx, tx, loose) })
	}
	mark := func() error {
		return pgx.BeginFunc(ctx, w, func(tx pgx.Tx) error { return m.mark(ctx, tx, matchLeftOpen, nonNil(m.open)) })
	}
	if !m.p.MarkBeside {
		if err := sortOwn(w); err != nil {
			return nil, err
		}
		return sum, mark()
	}
	// The run's sources are sorted on a connection of the store's pool and
	// the mark is made on the writer's, while the run acts and records its
	// findings: at the end of a first night of 1M, 0.5 s and 0.4 s of
	// statements that wait for nothing else. Each is a transaction of its
	// own: a source left unsorted is sorted by the next run.
	release := closeW
	closeW = nil
	var g errgroup.Group
	g.Go(func() error { return sortOwn(s.pool) })
	g.Go(func() error {
		defer release()
		if driver.Marking != nil {
			if err := driver.Marking(); err != nil {
				return err
			}
		}
		return mark()
	})
	sum.Marked = sync.OnceValue(g.Wait)
	return sum, nil
}

// beginner is a connection or a pool, as pgx.BeginFunc takes them.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// sortOwn sorts the run's sources (migration 022): the loose records
// its partitions showed and those of kept sources no partition held
// (driver.Spill.Unlinked), as loose lists them. A record the run's ingest
// kept is copied as the ledger holds it (its source, number, raw kind and
// fee come with it); one read from the ledger is looked up by its
// transaction, and the sources read from the ledger (scan), whose records
// of kinds that do not link no partition held, are read whole, and every
// source when a loose record has no transaction to look it up by (for such
// records alone: those of a kept source were copied). Looked up
// (until 2026-12-07), a first night of 1M's 53k loose records took 1.0 s
// of PostgreSQL's time: their pages of evidence were no longer in its
// buffers.
func (m *matching) sortOwn(ctx context.Context, tx pgx.Tx, loose *driver.NamedRecords) error {
	rows, _ := tx.Query(ctx, matchSortSources, nonNil(m.p.Sources))
	sorted, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(sorted) == 0 {
		return err // sorted already, by another run
	}
	scan, kept, named := m.scan, false, false
	for l := range loose.All() {
		switch {
		case l.SourceID != 0:
			kept = kept || slices.Contains(sorted, l.SourceID)
		case l.TxID == "":
			scan, named = m.p.Sources, true
		default:
			named = true
		}
	}
	// each copies into table the rows that row makes of the loose records.
	each := func(table, cols string, row func(copyRow, *reconcile.Evidence) copyRow) error {
		next, stop := iter.Pull(loose.All())
		defer stop()
		return copyRows(ctx, tx, table, cols, loose.Len(), func(b copyRow, _ int) copyRow {
			l, _ := next()
			return row(b, l)
		})
	}
	if kept {
		if err := each("evidence_loose", strings.Join(evidenceCopyCols, ", "), func(b copyRow, l *reconcile.Evidence) copyRow {
			if l.SourceID == 0 || !slices.Contains(sorted, l.SourceID) {
				return b
			}
			return b.evidence(l.SourceID, l.Seq, l)
		}); err != nil {
			return err
		}
	}
	if !named && len(scan) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, matchLooseSetup); err != nil {
		return err
	}
	if err := each("m_loose", "uri, line, tx_id, effect_key", func(b copyRow, l *reconcile.Evidence) copyRow {
		if l.SourceID != 0 {
			return b
		}
		return b.fields(4).text(l.URI).int4(l.Line).text(l.TxID).text(l.EffectKey)
	}); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, matchSortOwn, sorted, m.p.LinkKinds(), nonNil(scan), nonNil(m.scan))
	return err
}

// mark leaves the next run what it reads its scope from, once the run's
// partitions are recorded: the effects the run left without a state, as
// the statement left notes them from its argument, and its horizon; and
// forgets the new effects listed below that horizon.
func (m *matching) mark(ctx context.Context, tx pgx.Tx, left string, arg any) error {
	if _, err := tx.Exec(ctx, matchPendingDone); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, left, arg); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, matchMark, m.horizon); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, matchForget)
	return err
}

// prepare fetches the effects in scope and the earlier records, in
// temporary tables, and cuts them and the run's records into partitions
// (cut). Every read of the ledger it makes after its housekeeping sees one
// snapshot: a run that found no closed effect must not read the scope
// after another run closed some, for its evidence would then not name
// them back into it, and their records would look unexpected.
// The evidence indexes a large ingest deferred are built first when those
// reads look them up, else once it has read the effects in scope
// (ledgerdb.MatchParams.Indexes).
func (m *matching) prepare(ctx context.Context, sum *ledgerdb.MatchSummary) error {
	sources := nonNil(m.p.Sources)
	var closed, earlier bool
	if err := m.conn.QueryRow(ctx, `SELECT (`+matchClosed+`), (`+matchEarlierExists+`)`, sources).Scan(&closed, &earlier); err != nil {
		return err
	}
	lookups := closed || earlier // the reads look the evidence indexes up
	if m.p.Indexes != nil {
		if lookups {
			m.p.Indexes(true)
		} else {
			// Built once the scope is read: beside the reading of the
			// run's records and the cut, which use one processor (a
			// first night of 1M: 1.8 s of it), and the partitions.
			m.scopeRead = func() { m.p.Indexes(false) }
		}
	}
	if err := analyzeStale(ctx, m.conn, sources); err != nil {
		return err
	}
	if earlier {
		// The reads of the run's records by source skip the earlier
		// sources' pages only where evidence_source has summarized them
		// (migration 014); otherwise each reads the whole table.
		if _, err := m.conn.Exec(ctx, matchSummarize); err != nil {
			return err
		}
		if _, err := m.conn.Exec(ctx, matchSortEarlier, sources); err != nil {
			return err
		}
	}
	if _, err := m.conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ`); err != nil {
		return err
	}
	if err := m.fetch(ctx, sum); err != nil {
		return err // the connection, closed with it, rolls it back
	}
	_, err := m.conn.Exec(ctx, `COMMIT`)
	return err
}

// fetch is prepare's reading, in its snapshot.
func (m *matching) fetch(ctx context.Context, sum *ledgerdb.MatchSummary) error {
	sources, linkKinds := nonNil(m.p.Sources), m.p.LinkKinds()
	exec := func(sql string, args ...any) error {
		_, err := m.conn.Exec(ctx, sql, args...)
		return err
	}
	var closed, earlier bool
	if err := m.conn.QueryRow(ctx, `SELECT (`+matchClosed+`), (`+matchEarlierExists+`)`, sources).Scan(&closed, &earlier); err != nil {
		return err
	}
	sum.NoEarlier = !earlier
	var last *string
	if err := m.conn.QueryRow(ctx, matchHorizon).Scan(&last, &m.horizon); err != nil {
		return err
	}
	open, args := matchOpen, []any{}
	if last != nil {
		open, args = matchOpenListed, []any{*last}
	}
	if driver.ScopeRead != nil {
		driver.ScopeRead()
	}
	if err := exec(matchSetup); err != nil {
		return err
	}
	if !closed && !earlier {
		return m.cut(ctx, sum, `SELECT `+matchEffectCols+` FROM (`+open+`) m_eff`, args, sources, linkKinds)
	}
	var named func() ([]string, error)
	if closed {
		var (
			stop func()
			err  error
		)
		if named, stop, err = m.nameBeside(ctx, sources); err != nil {
			return err
		}
		defer stop()
	}
	if err := exec(`INSERT INTO m_eff `+open, args...); err != nil {
		return err
	}
	// The earlier records of the scope are read while the other
	// connection lists the effects the run's records name; those of the
	// closed effects its list names back, after.
	if earlier {
		// Without statistics m_eff looked to the planner like 200 keys: it
		// probed evidence_loose's indexes with each of a second night's 131k
		// (0.25, 0.20 and 0.15 s) where a hash join takes 0.05 s each. The
		// columns joined on, from a sample of 3,000 rows: 0.13 s for the
		// whole table's 30,000.
		if err := exec(`SET LOCAL default_statistics_target = 10; ANALYZE m_eff (key, external_id)`); err != nil {
			return err
		}
		if err := exec(matchEarlier, sources); err != nil {
			return err
		}
	}
	if closed {
		keys, err := named()
		if err != nil {
			return err
		}
		if err := exec(matchCandidates, keys); err != nil {
			return err
		}
		var candidates bool
		if err := m.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM m_cand)`).Scan(&candidates); err != nil {
			return err
		}
		if candidates {
			if err := exec(matchScopeNamed, sources); err != nil {
				return err
			}
			if earlier {
				if err := exec(`CREATE TEMP TABLE m_back AS SELECT * FROM m_eff WHERE key IN (SELECT key FROM m_cand)`); err != nil {
					return err
				}
				if err := exec(matchEarlierBack, sources); err != nil {
					return err
				}
				if err := exec(`DROP TABLE m_back`); err != nil {
					return err
				}
			}
		}
		if err := exec(`DROP TABLE m_cand`); err != nil {
			return err
		}
	}
	if earlier {
		var unsorted bool
		if err := m.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM source WHERE NOT sorted AND id <> ALL($1))`, sources).Scan(&unsorted); err != nil {
			return err
		}
		if unsorted {
			if err := exec(matchEarlierUnsorted, sources); err != nil {
				return err
			}
		}
	}
	return m.cut(ctx, sum, `SELECT `+matchEffectCols+` FROM m_eff`, nil, sources, linkKinds)
}

// nameBeside lists the effects the run's records name (matchNamed) on a
// connection of its own, in the snapshot of m.conn's transaction, while
// m.conn reads the scope: a second night of 100k on a ledger of 1M spent
// 1.1 s on each, one after the other. named waits for the list; stop
// cancels it, if need be, and waits for its connection to close.
func (m *matching) nameBeside(ctx context.Context, sources []int64) (named func() ([]string, error), stop func(), err error) {
	var snapshot string
	if err := m.conn.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var (
		keys    []string
		nameErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		conn, err := pgx.ConnectConfig(ctx, m.conn.Config())
		if err != nil {
			nameErr = err
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		if _, err := conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '`+
			strings.ReplaceAll(snapshot, "'", "''")+`'; SET LOCAL work_mem = '256MB'; SET LOCAL jit = off`); err != nil {
			nameErr = err
			return
		}
		rows, _ := conn.Query(ctx, matchNamed, sources)
		keys, nameErr = pgx.CollectRows(rows, pgx.RowTo[string])
	}()
	named = func() ([]string, error) {
		<-done
		return keys, nameErr
	}
	stop = func() {
		cancel()
		<-done
	}
	return named, stop, nil
}

// cut reads every effect in scope (from the query scope, given args) and every record
// into a Spill, which cuts them into partitions: the run's own records as
// its ingest kept them, when it did, else from the ledger.
func (m *matching) cut(ctx context.Context, sum *ledgerdb.MatchSummary, scope string, args []any, sources []int64, linkKinds []string) error {
	spill, err := driver.NewSpill()
	if err != nil {
		return err
	}
	m.spill = spill
	rows, err := m.conn.Query(ctx, scope, args...)
	if err != nil {
		return err
	}
	var e ledgerdb.ScopedEffect // one for every row: the Spill copies what it keeps
	for rows.Next() {
		err := m.scanEffect(rows, &e)
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
	if m.scopeRead != nil {
		m.scopeRead()
	}
	origins, err := m.origins(ctx)
	if err != nil {
		return err
	}
	taken, sources := m.kept.Take(sources)
	m.scan = sources
	sum.Kept, err = spill.AddKept(taken, linkKinds, func(id int64) (string, bool, bool) {
		o, ok := origins[id]
		return o.uri, o.webhook, ok
	})
	if err != nil {
		return err
	}
	rows, err = m.conn.Query(ctx, matchPartRecords, sources, linkKinds)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		e, mine, err := m.scanRecord(rows, origins)
		if err == nil {
			err = spill.Record(e, mine)
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

// close lets the spill go.
func (m *matching) close() {
	if m.spill != nil {
		m.spill.Close()
		m.spill = nil
	}
}

// read fills r with its partition, from the spill or, when m.staged is
// set, from the run's staged rows.
func (m *matching) read(ctx context.Context, q querier, r *read) error {
	if m.staged == "" {
		part, err := m.spill.Partition(r.part.Index)
		if err != nil {
			return err
		}
		r.part = part
		return nil
	}
	return m.readStaged(ctx, q, r.part)
}

// readStaged reads a staged partition.
func (m *matching) readStaged(ctx context.Context, q querier, part *ledgerdb.Partition) error {
	rows, err := q.Query(ctx, `SELECT `+matchEffectCols+` FROM stage_effect WHERE run_id = $1 AND part = $2`, m.staged, part.Index)
	if err != nil {
		return err
	}
	for rows.Next() {
		var e ledgerdb.ScopedEffect
		if err := m.scanEffect(rows, &e); err != nil {
			rows.Close()
			return err
		}
		part.Effects = append(part.Effects, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT `+matchPartCols+` FROM stage_record WHERE run_id = $1 AND part = $2`, m.staged, part.Index)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		e, mine, err := m.scanRecord(rows, nil)
		if err != nil {
			return err
		}
		if mine {
			part.Evidence = append(part.Evidence, *e)
		} else {
			part.Earlier = append(part.Earlier, *e)
		}
	}
	return rows.Err()
}

// scanEffect reads an effect of matchEffectCols into e: from the row's
// raw values when its times and flag came in binary, as pgx asks for them
// unless told to use the simple protocol (pgx's Scan into strings,
// pointers and times took 0.83 s of the 1.06 s a 1M night's scope cost the
// run here), else through Scan.
func (m *matching) scanEffect(rows pgx.Rows, e *ledgerdb.ScopedEffect) error {
	*e = ledgerdb.ScopedEffect{}
	if fd := rows.FieldDescriptions(); fd[5].Format != pgx.BinaryFormatCode || fd[10].Format != pgx.BinaryFormatCode || fd[11].Format != pgx.BinaryFormatCode {
		return m.scanEffectTyped(rows, e)
	}
	v := rows.RawValues()
	var err error
	e.Key, e.ExternalID = string(v[0]), string(v[4])
	e.Provider, e.Step = m.internBytes(v[1]), m.internBytes(v[2])
	e.Status, e.State = reconcile.Status(m.internBytes(v[3])), reconcile.Class(m.internBytes(v[9]))
	if e.CreatedAt, err = binaryTime(v[5]); err != nil {
		return fmt.Errorf("effect %q: created_at: %w", e.Key, err)
	}
	if v[10] != nil {
		if e.Since, err = binaryTime(v[10]); err != nil {
			return fmt.Errorf("effect %q: since: %w", e.Key, err)
		}
	}
	if len(v[11]) != 1 {
		return fmt.Errorf("effect %q: final: %d bytes", e.Key, len(v[11]))
	}
	e.Final = v[11][0] != 0
	e.Request = driver.PlainRequest(optString(v[6]), optString(v[7]), optString(v[8]))
	return nil
}

// scanEffectTyped is scanEffect through pgx's Scan.
func (m *matching) scanEffectTyped(rows pgx.Rows, e *ledgerdb.ScopedEffect) error {
	var (
		status, class           string
		amount, currency, whole *string
		since                   *time.Time
	)
	if err := rows.Scan(&e.Key, &e.Provider, &e.Step, &status, &e.ExternalID, &e.CreatedAt, &amount, &currency, &whole, &class, &since,
		&e.Final); err != nil {
		return err
	}
	e.Provider, e.Step = m.intern(e.Provider), m.intern(e.Step)
	e.Status, e.State, e.CreatedAt = reconcile.Status(m.intern(status)), reconcile.Class(m.intern(class)), e.CreatedAt.UTC()
	e.Request = driver.PlainRequest(amount, currency, whole)
	if since != nil {
		e.Since = since.UTC()
	}
	return nil
}

// binaryTime decodes a timestamptz in PostgreSQL's binary format:
// microseconds since 2000-01-01 UTC.
func binaryTime(b []byte) (time.Time, error) {
	if len(b) != 8 {
		return time.Time{}, fmt.Errorf("a time of %d bytes", len(b))
	}
	us := int64(binary.BigEndian.Uint64(b))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return time.Time{}, errors.New("an infinite time")
	}
	if us > math.MaxInt64-postgresEpoch {
		return time.Time{}, errors.New("a time out of range")
	}
	return time.UnixMicro(us + postgresEpoch).UTC(), nil
}

// optString is a raw value of a text column that may be NULL.
func optString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// origin is where a source's records were read, as a partition holds it.
type origin struct {
	uri     string
	webhook bool
}

// origins returns where each source was read, by its id: the records
// are read with their source's id (matchPartRecords), each of a night's
// million not sent its URI again.
func (m *matching) origins(ctx context.Context) (map[int64]origin, error) {
	rows, err := m.conn.Query(ctx, `SELECT id, uri, format = ANY($1) FROM source`, nonNil(m.p.WebhookFormats))
	if err != nil {
		return nil, err
	}
	out := map[int64]origin{}
	var (
		id int64
		o  origin
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &o.uri, &o.webhook}, func() error {
		out[id] = o
		return nil
	})
	return out, err
}

// scanRecord reads a record of matchPartCols, and whether it is the run's;
// or, given origins, of matchPartRecords, which names the source by its id.
func (m *matching) scanRecord(rows pgx.Rows, origins map[int64]origin) (*reconcile.Evidence, bool, error) {
	var (
		e        reconcile.Evidence
		mine     bool
		kind     string
		occurred *time.Time
		source   int64
	)
	where := []any{&e.URI, &e.Webhook}
	if origins != nil {
		where = []any{&source}
	}
	if err := rows.Scan(append(append([]any{&mine}, where...), &e.Line, &e.Provider, &kind, &e.TxID, &e.Amount.Minor, &e.Amount.Currency,
		&occurred, &e.Pending, &e.Failed, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID)...); err != nil {
		return nil, false, err
	}
	if origins != nil {
		o, ok := origins[source]
		if !ok {
			return nil, false, fmt.Errorf("a record of source %d, which the manifest does not hold", source)
		}
		e.URI, e.Webhook = o.uri, o.webhook
	}
	e.Provider, e.Kind, e.Amount.Currency = m.intern(e.Provider), reconcile.Kind(m.intern(kind)), m.intern(e.Amount.Currency)
	e.URI = m.intern(e.URI)
	if occurred != nil {
		e.Time = occurred.UTC()
	}
	return &e, mine, nil
}

// intern returns the one copy of a string that repeats across rows.
func (m *matching) intern(s string) string {
	if v, ok := m.strs[s]; ok {
		return v
	}
	m.strs[s] = s
	return s
}

// internBytes is intern of a raw value: a copy is made only of the first.
func (m *matching) internBytes(b []byte) string {
	if v, ok := m.strs[string(b)]; ok {
		return v
	}
	return m.intern(string(b))
}

// record writes a partition's confirmations in tx, whose connection has
// the temporary table m_conf, and returns how many attempted effects it
// confirmed: r's confirmations, settled (read.settle).
func (m *matching) record(ctx context.Context, tx pgx.Tx, r *read) (int, error) {
	confs, fresh, n := r.confirmed, r.fresh, 0
	if len(confs) == 0 {
		return 0, nil
	}
	err := func() error {
		// The fresh states are copied straight into effect_state; should
		// another writer have given one a state meanwhile, the upsert from
		// m_conf does them all instead.
		confirmed := string(reconcile.ClassConfirmed)
		nfresh := 0
		for _, f := range fresh {
			if f {
				nfresh++
			}
		}
		all := false // whether the upsert must do the fresh ones too
		if nfresh > 0 {
			err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
				return copyRows(ctx, sp, "effect_state", "key, class, final, run_id, classified_at, since", len(confs), func(b copyRow, i int) copyRow {
					if !fresh[i] {
						return b
					}
					return b.fields(6).text(confs[i].Key).text(confirmed).bool(true).text(m.p.RunID).timestamptz(m.now).timestamptz(m.now)
				})
			})
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation: a state was written meanwhile
				all, err = true, nil
			}
			if err != nil {
				return err
			}
		}
		if all || nfresh < len(confs) {
			if err := copyRows(ctx, tx, "m_conf", "key, external_id, fresh", len(confs), func(b copyRow, i int) copyRow {
				return b.fields(3).text(confs[i].Key).text(confs[i].ExternalID).bool(fresh[i])
			}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, matchRecordStates, m.p.RunID, m.now, confirmed, all); err != nil {
				return err
			}
		}
		// Only the effects read as attempted are sent: an effect read as
		// confirmed is never attempted again (a first night of 1M: 48k
		// keys, not 979k; its 21 statements took 2.45 s against 2.70 s,
		// most of it fetching the attempted rows the index builds beside
		// them had pushed out of the cache).
		var keys, ids []string
		for i, c := range confs {
			if c.ExternalID != "" && r.attempted[i] {
				keys, ids = append(keys, c.Key), append(ids, c.ExternalID)
			}
		}
		if len(keys) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, matchRecordConfirmed, m.now, keys, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		r.given = make(map[string]string, len(keys))
		for rows.Next() {
			var key, id string
			if err := rows.Scan(&key, &id); err != nil {
				return err
			}
			r.given[key] = id
			n++
		}
		return rows.Err()
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
		sources)
	if err != nil {
		return err
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		return nil
	}
	// The plans need the tables' sizes and their columns' rough spread, not
	// fine histograms: a tenth of the default sample (3,000 rows) gives
	// those (a second night's three ANALYZEs took 0.86 s with the default,
	// under 0.1 s each with this); autovacuum's next ANALYZE takes the
	// default sample again.
	if _, err := conn.Exec(ctx, `SET default_statistics_target = 10`); err != nil {
		return err
	}
	for _, t := range stale {
		if _, err := conn.Exec(ctx, `ANALYZE `+pgx.Identifier{t}.Sanitize()+" ("+analyzedColumns[t]+")"); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, `RESET default_statistics_target`)
	return err
}
