package reconcile

import (
	"errors"
	"fmt"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrKeyReused means an effect key already exists with a different request.
	ErrKeyReused = errors.New("effect key reused with a different request")
	// ErrInvalidTransition means an effect or claim is not in a state that
	// allows the change asked for (confirming an abandoned effect, say).
	ErrInvalidTransition = errors.New("invalid state transition")
	// ErrUnknownFence means a fence token was presented that was never issued
	// for that key.
	ErrUnknownFence = errors.New("unknown fence token")
	// ErrAlreadySettled means the claim was already settled under this token.
	ErrAlreadySettled = errors.New("claim already settled with this token")
	// ErrSchema means the ledger's schema is missing, behind, ahead of this
	// binary or altered.
	ErrSchema = errors.New("ledger schema")
)

// KeyReusedError tells which key was reused and with what requests.
type KeyReusedError struct {
	Key      string
	Existing []byte
	Given    []byte
}

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("effect %s: key reused with a different request (recorded %s, given %s)", e.Key, e.Existing, e.Given)
}

// Unwrap makes errors.Is(err, ErrKeyReused) hold.
func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }
