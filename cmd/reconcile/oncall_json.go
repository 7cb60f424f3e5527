package main

import (
	"reconcile/job"
	"reconcile/report"
)

// The JSON of the on-call commands (`show --json`, `escalations --json`) is
// report's shapes (report.Show, report.Escalation); these put a job's view
// into them.

func escalationsOut(es []job.EscalationView) []report.Escalation {
	out := make([]report.Escalation, len(es))
	for i := range es {
		out[i] = report.EscalationOf(&es[i].Escalation)
		out[i].PageFailed, out[i].PageError = es[i].PageFailed, es[i].PageError
	}
	return out
}

func showOut(r *job.EffectView) *report.Show {
	out := &report.Show{Effect: report.EffectOf(r.Effect), Evidence: []report.Evidence{}, Claims: []report.Claim{},
		Compensations: []report.Effect{}, Escalations: escalationsOut(r.Escalations), History: []report.EffectFinding{}}
	if r.State != nil {
		out.State = report.EffectStateOf(r.State)
	}
	for i := range r.Evidence {
		out.Evidence = append(out.Evidence, report.EvidenceOf(&r.Evidence[i]))
	}
	for i := range r.Claims {
		out.Claims = append(out.Claims, report.ClaimOf(&r.Claims[i]))
	}
	for i := range r.Compensations {
		out.Compensations = append(out.Compensations, report.EffectOf(&r.Compensations[i]))
	}
	for _, f := range r.History {
		out.History = append(out.History, report.EffectFinding{RunID: f.RunID, At: report.NullTime(f.At), Discrepancy: report.FindingOf(&f.Discrepancy)})
	}
	return out
}
