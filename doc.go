// Package reconcile holds the domain of the reconcile job: effects recorded in
// the ledger, evidence read from the providers' own accounts, money, claims
// with fence tokens, and the sentinel errors callers branch on.
//
// It imports nothing else of this module. Every other package imports it and
// not its siblings; cmd/reconcile wires them together.
package reconcile
