package job

import (
	"context"
	"fmt"
	"strings"

	"reconcile"
	"reconcile/escalate"
	"reconcile/report"
)

// pageOpen sends every page not sent yet, once the run's actions are made
// and its findings recorded: this run's, and those an earlier run could
// not send. Each page the pager did not take is added to res (a failed
// run's has no findings) and its escalate action says so. The error says
// which pages failed: the run then exits 1, and the next run sends them
// again. A run that is being stopped leaves its pages to the next.
func (j *Job) pageOpen(ctx context.Context, raiser *escalate.Raiser, res *report.Result, secrets []string) error {
	if ctx.Err() != nil {
		j.log().Warn("run stopped: its pages are left for the next run")
		return nil
	}
	paged, err := raiser.PageOpen(ctx, pageMoney(res))
	if err != nil {
		return fmt.Errorf("paging: %w", err)
	}
	if len(paged.Failed) == 0 {
		return nil
	}
	failed := map[string]string{}
	var keys []string
	for _, f := range paged.Failed {
		e := &f.Escalation
		msg := reconcile.Scrub(f.Err.Error(), secrets...) // the pager's errors hide them already: this is the second lock
		failed[e.Key] = msg
		keys = append(keys, e.Key)
		res.PagesFailed = append(res.PagesFailed, report.PageFailure{Key: e.Key, Subject: e.Subject, Class: string(e.Class), Error: msg})
	}
	for i := range res.Discrepancies {
		for j := range res.Discrepancies[i].Actions {
			x := &res.Discrepancies[i].Actions[j]
			if msg, ok := failed[x.Key]; ok && x.Kind == reconcile.ActionEscalate {
				x.Note = strings.TrimPrefix(x.Note+"; page failed: "+msg+"; the next run sends it again", "; ")
			}
		}
	}
	return fmt.Errorf("%d of %d pages were not delivered: %s (%s); the escalations are recorded and the next run sends them again",
		len(paged.Failed), len(paged.Failed)+len(paged.Sent), strings.Join(keys, ", "), failed[keys[0]])
}

// pageMoney says what each escalation is about, from the run's result: the
// money at risk of the finding it is about (by its escalate action, else
// by its subject), or the amount of the action it is about (a
// compensation in doubt). An escalation the result does not name (one an
// earlier run raised, a run held back by its limits) has no money known.
func pageMoney(res *report.Result) func(*reconcile.Escalation) reconcile.Money {
	byKey := map[string]reconcile.Money{}
	bySubject := map[string]reconcile.Money{}
	byAction := map[string]reconcile.Money{}
	for i := range res.Discrepancies {
		d := &res.Discrepancies[i]
		m := reconcile.Money{Minor: d.AtRisk(), Currency: d.Currency}
		if d.EffectKey != "" {
			bySubject[d.EffectKey] = m
		}
		for _, x := range d.Actions {
			switch {
			case x.Kind == reconcile.ActionEscalate:
				byKey[x.Key] = m
				if _, ok := bySubject[x.Target]; !ok && x.Target != "" {
					bySubject[x.Target] = m
				}
			case x.Currency != "":
				byAction[x.Key] = reconcile.Money{Minor: x.AmountMinor, Currency: x.Currency}
			}
		}
	}
	return func(e *reconcile.Escalation) reconcile.Money {
		if m, ok := byKey[e.Key]; ok {
			return m
		}
		if m, ok := byAction[e.Subject]; ok {
			return m
		}
		return bySubject[e.Subject]
	}
}
