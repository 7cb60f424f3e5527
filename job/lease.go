package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"reconcile"
	"reconcile/clock"
	"reconcile/ledgerdb"
)

// RunLeaseKey is the claim that one run at a time holds on a ledger.
const RunLeaseKey = "lease:run"

// runLease is the ledger's run lease, held while a run works. Its context
// is cancelled when the lease is lost (a renewal superseded), so a run that
// was taken over stops instead of working on beside its successor.
type runLease struct {
	ctx     context.Context
	cancel  context.CancelFunc
	store   ledgerdb.Store
	clock   clock.Clock
	owner   string
	fence   int64
	ttl     time.Duration
	stopped chan struct{}
	log     *slog.Logger
}

// takeRunLease takes the run lease for ttl, renewed at a third of that
// while the run works, so a run that dies frees the ledger within ttl. It
// returns a nil lease and the holder's claim when another run holds the
// lease; that is logged, and the caller skips its run.
func (j *Job) takeRunLease(ctx context.Context, owner string, ttl time.Duration) (*runLease, *reconcile.Claim, error) {
	if ttl <= 0 {
		return nil, nil, fmt.Errorf("run lease of %s: a lease needs a deadline", ttl)
	}
	c, err := j.Store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: RunLeaseKey, Owner: owner, TTL: ttl})
	if err != nil {
		return nil, nil, err
	}
	if c.Outcome != reconcile.ClaimOutcomeClaimed {
		j.log().Warn("another run holds the ledger's run lease: this run is skipped", "holder", c.Claim.Owner,
			"until", c.Claim.LeaseUntil.Format(time.RFC3339))
		return nil, &c.Claim, nil
	}
	l := &runLease{store: j.Store, clock: j.clock(), owner: owner, fence: c.Claim.Fence, ttl: ttl, stopped: make(chan struct{}), log: j.log()}
	l.ctx, l.cancel = context.WithCancel(ctx)
	go l.renew()
	return l, nil, nil
}

func (l *runLease) renew() {
	defer close(l.stopped)
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.clock.After(l.ttl / 3):
		}
		w, err := l.store.ClaimRenew(l.ctx, &ledgerdb.RenewParams{Key: RunLeaseKey, Fence: l.fence, TTL: l.ttl})
		if err != nil && l.ctx.Err() == nil {
			l.log.Warn("run lease not renewed; trying again", "err", err)
			continue
		}
		if w != nil && w.Outcome == reconcile.WriteOutcomeSuperseded {
			l.log.Error("the run lease was taken over by another run: stopping", "holder", w.Claim.Owner)
			l.cancel()
			return
		}
	}
}

// release gives the lease back, even when the run was cancelled. The claim
// is settled as failed, the state that the next run may take at once.
func (l *runLease) release() {
	l.cancel()
	<-l.stopped
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 10*time.Second)
	defer cancel()
	if _, err := l.store.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: RunLeaseKey, Fence: l.fence, Owner: l.owner, Error: "released"}); err != nil {
		l.log.Warn("run lease not released; it expires by itself", "err", err, "within", l.ttl)
	}
}
