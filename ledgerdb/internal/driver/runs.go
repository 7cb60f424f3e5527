package driver

import (
	"context"
	"errors"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
)

// Finished is RunFinish's answer once its conditional write ran: r, the
// run it finished, with p's result; or, when no running run was written
// (err is reconcile.ErrNotFound), why: no such run (what get says), or a
// run that is not running any more.
func Finished(ctx context.Context, p *ledgerdb.FinishRunParams, r *reconcile.Run, err error,
	get func(ctx context.Context, id string) (*reconcile.Run, error)) (*reconcile.Run, error) {
	if errors.Is(err, reconcile.ErrNotFound) {
		if _, gerr := get(ctx, p.ID); gerr != nil {
			return nil, fmt.Errorf("run %s: finish: %w", p.ID, gerr)
		}
		return nil, fmt.Errorf("run %s: finish: %w: it is not running", p.ID, reconcile.ErrInvalidTransition)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: finish: %w", p.ID, err)
	}
	r.Result = p.Result
	return r, nil
}
